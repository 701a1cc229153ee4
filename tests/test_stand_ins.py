"""A stand-in value is never printed as a number (issue 22).

A quantity that cancels from the answer is held at a placeholder so the steps can run,
and what is computed from it moves with it: neither value says anything about the
pins. Every path that prints a derivation (solve text and JSON, imply, report Markdown
and HTML, fit) names such a quantity as cancelling, or leaves it out. The names looked
for come from each question's own plan (``placeholders`` and ``provisional``).
"""

import json
import re
from pathlib import Path

import pytest
from chalk.knowledge.price_sheets import shipped_sheets
from chalk.solvers.records.derivation import Derivation

from chalk import solve
from chalk.applications.imply import imply

ROOT = Path(__file__).resolve().parents[1]


def held(d: Derivation) -> set[str]:
    """The quantities a derivation holds at stand-in values."""
    return set(d.placeholders) | set(d.provisional)


def printed(text: str, names) -> list[str]:
    """Each place ``text`` shows one of ``names`` with a number beside it: ``NAME = 120``,
    ``NAME: 5``, ``"NAME": 1.2`` or ``"NAME": {"value": 1.2`` (JSON)."""
    found = []
    for name in names:
        # on one line: a formula's "NAME\n     = (1)..." goes on to other quantities
        pattern = (rf'(?<![\w.]){re.escape(name)}(?!\w)"?[ \t]*[=:][ \t]*'
                   r'(\{[ \t]*"value"[ \t]*:[ \t]*)?\(?[ \t]*[-+]?\.?\d')
        found += [m.group(0) for m in re.finditer(pattern, text)]
    return found


def shown_in_steps(d: Derivation, lines_of) -> list[str]:
    """Stand-in values that a step's printed lines show (as ``120 sequence``), where no
    value the pins fix in the same step prints the same way."""
    found = []
    for index, step in enumerate(d.steps, 1):
        names = (*step.inputs, *step.variables)
        stand_ins = {d.show(n) for n in names if n in held(d)}
        fixed = {d.show(n) for n in names if n not in held(d)}
        text = " ".join(lines_of(index, step))
        found += [f"step {index}: {v}" for v in sorted(stand_ins - fixed)
                  if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", text)]
    return found


def assert_nothing_held_is_printed(d: Derivation, *texts: str) -> None:
    names = held(d)
    for text in texts:
        assert printed(text, names) == []
    assert shown_in_steps(d, d.step_lines) == []


def deduction_texts(implication) -> dict[int, str]:
    """Each deduction's part of ``Implication.text()``, by its position."""
    text = implication.text()
    out = {}
    for index, d in enumerate(implication.deductions, 1):
        head = f"\n{index}. {d.title}\n"
        start = text.index(head)
        nxt = f"\n{index + 1}. {implication.deductions[index].title}\n" \
            if index < len(implication.deductions) else None
        out[index] = text[start:text.index(nxt, start + 1) if nxt else len(text)]
    return out


def test_opus_fast_mode_names_what_cancels_and_prints_no_stand_in():
    # Regression: the fast-mode derivation printed "batch_size = 120 sequence †",
    # "step_time = 1.2 ms †" and "cost_per_token = 0.6 USD/Mtoken †", with nothing saying
    # what † meant. The answer itself is fixed: cost per token goes as step time over
    # batch, so k x the price at 1/s the step time means a batch of 1/(k s) the normal
    # one; the sheet's k = 6 and s = 2.5 give 1/15 = 0.06667
    implication = imply("claude_opus_4_6")
    fast = implication.deduction("fast")
    d = fast.solution.derivation
    assert fast.solution.value("fast_batch_ratio") == pytest.approx(1 / (6 * 2.5), rel=1e-9)
    assert {"batch_size", "step_time", "cost_per_token"} <= held(d)
    section = deduction_texts(implication)[implication.deductions.index(fast) + 1]
    for leak in ("batch_size = 120", "step_time = 1.2 ms", "cost_per_token = 0.6", "†"):
        assert leak not in section
    assert (f"{', '.join(d.placeholders)} cancel from the answer: any value gives the same "
            "fast_batch_ratio") in section
    assert_nothing_held_is_printed(d, section, json.dumps(fast.to_dict()))
    assert "batch_size" in json.dumps(fast.to_dict()["cancels"] + list(d.provisional))


def test_solve_names_what_cancels_in_text_and_json():
    # README "what cancels": under the equal split, RL tokens = pre-training tokens x
    # (rl cost ratio 1) x 6 / (6 x 3) = 15e12 / 3 = 5e12, and inference tokens =
    # 15e12 x 1 x 6 / (2 x 3) = 15e12, whatever the parameter count, which cancels
    s = solve(["rl_tokens", "inference_tokens"],
              {"pretrain_tokens": "15e12 token", "rl_flops_per_param": "6 FLOP/param/token",
               "decode_inefficiency": 3}, ["equal_split"])
    d = s.derivation
    assert s.value("rl_tokens", "token") == pytest.approx(5e12, rel=1e-12)
    assert s.value("inference_tokens", "token") == pytest.approx(15e12, rel=1e-12)
    assert d.placeholders == ("active_params",)
    assert {"flops_per_token", "train_flops"} <= held(d)
    text, body = str(s), s.to_dict()
    assert_nothing_held_is_printed(d, text, json.dumps(body), d.markdown())
    assert "active_params cancels from the answer" in text
    assert body["cancels"] == ["active_params"]
    values = {n: v for step in body["steps"] for n, v in step["values"].items()}
    assert values["active_params"] == {"value": None, "unit": "param", "cancels": True}
    assert values["train_flops"]["value"] is None
    assert values["train_flops"]["depends_on_placeholder"] is True


@pytest.mark.slow
def test_no_imply_sheet_prints_a_stand_in():
    seen = 0
    for sheet in shipped_sheets():
        implication = imply(sheet)
        texts = deduction_texts(implication)
        for index, deduction in enumerate(implication.deductions, 1):
            if deduction.solution is None:
                continue
            d = deduction.solution.derivation
            seen += bool(held(d))
            assert_nothing_held_is_printed(d, texts[index], json.dumps(deduction.to_dict()))
    assert seen  # some sheet's deduction holds a stand-in (the fast modes do)


@pytest.mark.slow
def test_no_shipped_report_prints_a_stand_in():
    from chalk.report import build
    from chalk.report.html import render
    from chalk.report.markdown import markdown
    from chalk.report.report import step_parts

    for path in sorted((ROOT / "knowledge" / "deductions").glob("*.toml")):
        report = build(str(path))
        text, _ = markdown(report)
        page = render(report)
        for section in report.sections:
            for solution in {id(s): s for s in (section.solution, section.shown)
                             if s is not None}.values():
                d = solution.derivation
                start = text.index(f'<a id="{section.anchor}"></a>')
                part = text[start:text.index("<a id=", start + 1)]
                page_part = page[page.index(f'<h2 id="{section.anchor}">'):]
                page_part = page_part[:page_part.index("<h2", 4)]
                assert printed(part, held(d)) == []
                assert printed(page_part, held(d)) == []
                by_index = {i: tuple(p for p in (subst, result) if p is not None)
                            for i, _, _, _, subst, result, _, _ in step_parts(solution)}
                assert shown_in_steps(d, lambda i, _, parts=by_index: parts[i]) == []


@pytest.mark.slow
def test_no_example_fit_prints_a_stand_in():
    from chalk.knowledge import load_model
    from chalk.symbolic.units import Q_

    from chalk.api import prepare
    from chalk.applications.fit import fit
    from chalk.applications.fit.spec import load_spec

    model = load_model()
    planned = 0
    for path in sorted((ROOT / "docs" / "examples").glob("*.toml")):
        spec = load_spec(path, model)
        result = fit(path)
        text, body = result.text(), result.to_json()
        unknowns = {u.quantity for u in spec.unknowns}
        for subject in spec.subjects:
            targets = sorted({o.quantity for o in spec.observations
                              if o.subject == subject.name} - unknowns)
            if not targets:
                continue
            # each unknown at its prior's nominal value, as the fit plans it
            given = {**spec.pins, **subject.pins,
                     **{u.quantity: Q_(u.prior.nominal / model.variables[u.quantity].to_base,
                                       model.variables[u.quantity].pint_unit)
                        for u in spec.unknowns}}
            plan = prepare(targets, given, [*spec.presets, *subject.presets]).plan
            names = set(plan.placeholders) | set(plan.provisional)
            assert printed(text, names) == [] and printed(body, names) == []
            planned += 1
    assert planned  # each subject's question was planned and its stand-ins looked for
