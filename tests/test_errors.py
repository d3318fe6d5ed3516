"""One error tree: every exception the product defines lives in ``orc.errors`` and carries a code and a status."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Iterator

import pytest

import orc.errors
from orc.errors import (
    ETagMismatch,
    InternalError,
    ItemAlreadyExists,
    ItemNotFound,
    OrcError,
    ScriptExhausted,
    StorageError,
    StorageUnavailable,
)
from orc.http.problems import problem_for
from orc.turns import error_event, turn_failed

PRODUCT_PACKAGES = ("orc", "mcp_server")


def product_modules() -> Iterator[str]:
    """The name of every module of the product's packages (``__main__`` modules are imported, not run)."""
    for name in PRODUCT_PACKAGES:
        package = importlib.import_module(name)
        yield name
        for found in pkgutil.walk_packages(package.__path__, f"{name}."):
            yield found.name


def product_exception_classes() -> set[type[BaseException]]:
    """Every exception class a product module defines, nested classes included."""
    classes: set[type[BaseException]] = set()
    for name in product_modules():
        module = importlib.import_module(name)
        pending = [value for value in vars(module).values() if inspect.isclass(value)]
        while pending:
            cls = pending.pop()
            if cls.__module__.split(".")[0] not in PRODUCT_PACKAGES:
                continue
            pending.extend(value for value in vars(cls).values() if inspect.isclass(value))
            if issubclass(cls, BaseException):
                classes.add(cls)
    return classes


def qualified_name(cls: type[BaseException]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_exception_class_of_the_product_is_defined_in_orc_errors() -> None:
    classes = product_exception_classes()

    strays = sorted(qualified_name(cls) for cls in classes if cls.__module__ != "orc.errors")

    assert strays == []
    assert len(classes) >= 25  # the walk found the tree itself, not an empty set


ERRORS = [pytest.param(cls, id=qualified_name(cls)) for cls in sorted(product_exception_classes(), key=qualified_name)]


@pytest.mark.parametrize("cls", ERRORS)
def test_every_error_derives_from_orc_error_with_a_code_a_status_and_a_docstring(cls: type[BaseException]) -> None:
    assert issubclass(cls, OrcError)
    assert isinstance(cls.code, str) and cls.code
    assert isinstance(cls.status, int) and 400 <= cls.status <= 599
    assert cls.__doc__ and cls.__doc__.strip()


def test_the_storage_port_errors_belong_to_the_tree_under_internal_error() -> None:
    for cls in (ItemNotFound, ItemAlreadyExists, ETagMismatch):
        assert issubclass(cls, StorageError)
    assert issubclass(StorageError, InternalError)
    assert issubclass(StorageUnavailable, orc.errors.ServiceUnavailable)


def test_a_script_that_runs_out_is_still_an_assertion_error_for_pytest() -> None:
    assert issubclass(ScriptExhausted, AssertionError)


def test_an_internal_error_reaching_http_answers_a_generic_internal_error() -> None:
    response = problem_for(ETagMismatch("item 'c1' changed under us"))

    body = json.loads(bytes(response.body))
    assert response.status_code == 500
    assert body["code"] == "internal_error"
    assert body["detail"] == "the request failed on the server; it was not stored"


def test_an_internal_error_ending_a_turn_is_reported_like_any_unexpected_failure() -> None:
    event = turn_failed(ItemNotFound("item 'c1' is gone"))

    assert event == error_event(OrcError("the turn failed; nothing was stored. Retry, or contact the operator."))
    assert event["code"] == "internal_error"
    assert "c1" not in event["message"]
