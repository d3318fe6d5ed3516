"""What `azd up` passes to the template: infra/main.parameters.json maps each template parameter a deployment must
choose to the azd environment value the docs tell users to set, and the template refuses a deployment nobody could
sign in to (Easy Auth without its app registration, api-key without keys) instead of deploying it."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BICEP = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")
PARAMETERS = json.loads((ROOT / "infra" / "main.parameters.json").read_text(encoding="utf-8"))["parameters"]
GUIDE = (ROOT / "docs" / "deploying-to-azure.md").read_text(encoding="utf-8")
PARAM = re.compile(r"^param (\w+) \w+(?: = (.+))?$", re.M)


def azd_variable(value: str) -> str:
    """The azd environment value a parameter's ``${NAME}`` / ``${NAME=default}`` reads."""
    match = re.fullmatch(r"\$\{(\w+)(?:=[^}]*)?\}", value)
    assert match, value
    return match.group(1)


def test_every_mapped_parameter_is_one_of_the_templates_and_every_required_one_is_mapped() -> None:
    declared = {name: default for name, default in PARAM.findall(BICEP)}

    assert set(PARAMETERS) <= set(declared)
    assert {name for name, default in declared.items() if not default} <= set(PARAMETERS)


def test_the_sign_in_choices_the_guide_sets_with_azd_env_set_reach_the_template() -> None:
    mapped = {name: azd_variable(entry["value"]) for name, entry in PARAMETERS.items()}

    assert mapped["orcAuth"] == "ORC_AUTH" and PARAMETERS["orcAuth"]["value"] == "${ORC_AUTH=easyauth}"
    assert mapped["orcApiKeys"] == "ORC_API_KEYS"
    assert mapped["authClientId"] == "ORC_AUTH_CLIENT_ID"
    for variable in ("ORC_AUTH", "ORC_API_KEYS", "ORC_AUTH_CLIENT_ID"):
        assert f"azd env set {variable} " in GUIDE, variable


def test_an_easyauth_deployment_without_a_client_id_and_an_api_key_one_without_keys_are_refused() -> None:
    checks = {
        name: (condition, fallback)
        for name, condition, fallback in re.findall(r"^var (\w+) = (.+?) \? fail\('[^']+'\) : (\w+)$", BICEP, re.M)
    }

    assert checks["signInClientId"] == ("orcAuth == 'easyauth' && empty(authClientId)", "authClientId")
    assert checks["apiKeys"] == ("orcAuth == 'api-key' && empty(orcApiKeys)", "orcApiKeys")
    auth = BICEP[BICEP.index("name: 'authsettingsV2'") :]
    auth = auth[: auth.index("\n}\n")]
    assert "signInClientId" in auth and "authClientId" not in auth  # only the checked value is deployed
    assert "{ name: 'ORC_API_KEYS', value: apiKeys }" in BICEP


def test_the_guide_says_what_only_an_admin_may_do_as_the_role_checks_do() -> None:
    roles = (ROOT / "orc" / "http" / "roles.py").read_text(encoding="utf-8")
    admin_only = re.findall(r'require_admin\(principal, "([^"]+)"\)', roles)
    said = " ".join(GUIDE.split())

    assert len(admin_only) == 3
    for action in admin_only:
        assert action in said, action
    assert "creating organizations" not in said and "may create folders and usecases" in said
