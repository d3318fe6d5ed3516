"""Target: with 10 available documents of ~5,000 tokens each, the tokens sent to the model per turn are ≤ 10% of
what bundling every document into the prompt would cost, on the same questions.

Set-up: the embedded default process with the built-in offline model (it meters tokens like every orc model:
about four characters per token, over every message of every request). Ten documents of ~20,000 characters
(~5,000 tokens) are uploaded to the organization; each is about one subject and holds one specific fact among
filler sentences on the same subject and vocabulary. Each question asks for one of those facts and runs as the
first turn of its own conversation, focused on the organization, without attached files. orc then plans
(``documents.search``) and answers from the spans found: two model requests whose input tokens are summed
(``metadata.usage.input_tokens``).

The bundling baseline for the same question is one answer request whose prompt carries every span of every
document as sources (the answer prompt with all ten documents), metered the same way. Each answer is also
checked: it must contain the fact and cite the document that holds it.
"""

from __future__ import annotations

import argparse
import random
import statistics

from bench.common import BenchResult, Check
from bench.documents_common import embedded_runtime, exit_with, library_of, standalone
from orc.composition.foundation import parts_of
from orc.contracts import SourceSpan
from orc.conversations import FocusContext
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.graph.answer_prompt import answer_system_prompt
from orc.models.messages import approx_tokens
from orc.principal import LOCAL_PRINCIPAL
from orc.search.spans import source_ref
from orc.turns import TurnRequest

TARGET_RATIO = 0.10
DOCUMENT_CHARS = 20_000

SUBJECTS = [
    ("orion-room.txt", "the Orion meeting room", "What is the maximum occupancy of the Orion meeting room?",
     "The maximum occupancy of the Orion meeting room is 14 people.", "14 people"),
    ("fleet-policy.txt", "the company car fleet", "How many kilometres may a company car be driven per year?",
     "A company car may be driven at most 32,000 kilometres per year.", "32,000"),
    ("expenses.txt", "travel expenses", "What is the daily meal allowance for travel?",
     "The daily meal allowance for travel is 48 euros.", "48 euros"),
    ("security.txt", "badge security", "How long is a visitor badge valid?",
     "A visitor badge is valid for 12 hours after it is printed.", "12 hours"),
    ("it-laptops.txt", "laptop replacement", "How often are laptops replaced?",
     "Laptops are replaced every 42 months under the hardware plan.", "42 months"),
    ("parking.txt", "the parking garage", "What is the height limit of the parking garage?",
     "The height limit of the parking garage is 2.1 metres.", "2.1 metres"),
    ("training.txt", "the training budget", "What is the yearly training budget per employee?",
     "The yearly training budget per employee is 1,800 euros.", "1,800 euros"),
    ("canteen.txt", "the canteen", "When does the canteen close on Fridays?",
     "The canteen closes at 14:30 on Fridays.", "14:30"),
    ("archive.txt", "the document archive", "How long are signed contracts archived?",
     "Signed contracts are archived for 11 years in the vault.", "11 years"),
    ("wellness.txt", "the wellness programme", "How many massage sessions does the wellness programme include?",
     "The wellness programme includes 6 massage sessions per year.", "6 massage sessions"),
]  # fmt: skip

_VERBS = ["is reviewed", "is described", "is managed", "is documented", "is discussed", "is updated", "is audited"]
_WHO = ["the facilities team", "the works council", "each department head", "the finance office", "the HR desk"]
_WHEN = ["every quarter", "at the start of each year", "when the budget is approved", "after each audit",
         "during onboarding", "before the summer break"]  # fmt: skip
_EXTRA = [
    "Questions go to the intranet help page.",
    "Exceptions need a written request.",
    "The rules apply to every site.",
    "Changes are announced by email.",
    "Older versions are withdrawn.",
]


def document(subject: str, fact: str, rng: random.Random) -> str:
    """About ``DOCUMENT_CHARS`` characters on ``subject`` with ``fact`` somewhere in the middle."""
    paragraphs: list[str] = []
    length = 0
    while length < DOCUMENT_CHARS:
        sentences = [
            f"The policy on {subject} {rng.choice(_VERBS)} by {rng.choice(_WHO)} {rng.choice(_WHEN)}."
            for _ in range(rng.randint(3, 5))
        ]
        sentences.append(rng.choice(_EXTRA))
        paragraphs.append(" ".join(sentences))
        length += len(paragraphs[-1]) + 2
    paragraphs.insert(len(paragraphs) // 2, fact)
    return f"Guide to {subject}\n\n" + "\n\n".join(paragraphs)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options (none beyond the common ones)."""


async def run(args: argparse.Namespace) -> BenchResult:
    """Upload the ten documents, then ask each question and compare its tokens with bundling."""
    del args
    rng = random.Random(5)
    result = BenchResult(name="documents_tokens")
    organization = ContextRef("organization", LOCAL_PRINCIPAL.organization)
    async with embedded_runtime() as runtime:
        library = library_of(runtime)
        uploads = [Upload(name, document(subject, fact, rng).encode()) for name, subject, _, fact, _ in SUBJECTS]
        await runtime.foundation.context_documents.add(LOCAL_PRINCIPAL, organization, uploads)
        scope = await runtime.foundation.scopes.resolve(
            LOCAL_PRINCIPAL, context_type="organization", context_id=organization.id
        )
        every_span: list[SourceSpan] = []
        document_tokens = []
        for doc in (await runtime.foundation.scopes.available(LOCAL_PRINCIPAL, scope)).documents:
            page = await library.content(LOCAL_PRINCIPAL, scope, doc.info.document_id, limit=1)
            # The pipeline stored every document's text: the baseline takes every span from there.
            location = doc.location
            text = await parts_of(runtime.foundation).texts.load(
                location.partition_key, location.document_id, doc.content_hash
            )
            assert text is not None
            document_tokens.append(approx_tokens(text.text))
            every_span.extend(
                SourceSpan(ref=source_ref(page.document, s.span_id), document=page.document, span_id=s.span_id,
                           page=s.page, text=s.text)
                for s in text.spans
            )  # fmt: skip
        bundled_system = answer_system_prompt("document", sources=every_span)
        ratios = []
        correct = 0
        for number, (name, _, question, _, expected) in enumerate(SUBJECTS):
            turn = await runtime.orchestrator.ask(
                TurnRequest(
                    question=question,
                    conversation_id=f"tokens-{number}",
                    context=FocusContext(type="organization", id=organization.id),
                )
            )
            sent = turn.metadata.usage.input_tokens
            bundled = approx_tokens(bundled_system) + approx_tokens(question)
            ratios.append(sent / bundled)
            right = expected in turn.answer and any(c.document == name for c in turn.citations)
            correct += right
            result.rows.append(
                {
                    "question": question[:48],
                    "model_calls": turn.metadata.model_calls,
                    "tokens_sent": sent,
                    "bundled_tokens": bundled,
                    "ratio_pct": round(100 * sent / bundled, 2),
                    "answer_ok": right,
                }
            )
    result.checks = [
        Check("tokens per turn / bundling, mean", round(100 * statistics.fmean(ratios), 2), 100 * TARGET_RATIO, "%"),
        Check("tokens per turn / bundling, worst question", round(100 * max(ratios), 2), 100 * TARGET_RATIO, "%"),
    ]
    result.details = {
        "document_tokens": document_tokens,
        "answers_correct": f"{correct}/{len(SUBJECTS)}",
    }
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
