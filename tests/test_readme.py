"""The README's Quick start and CI run the same commands."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    block = section.split("```", 2)[1]
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_both():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].startswith("pip install -e . && chalk solve")
    assert commands[1] == 'pip install -e ".[test]" && python -m pytest'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in commands:
        assert command in ci
