"""The cache of compiled questions: a repeated ``chalk solve`` answers without sympy, the
same to the byte as the full solver, and never from an entry that does not fit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from chalk.cli import cache

# The console script's entry, reporting on stderr's last line whether sympy was loaded.
RUNNER = ("import sys; from chalk.cli import main; code = main(); "
          "sys.stderr.write('\\nsympy loaded: %s' % ('sympy' in sys.modules)); sys.exit(code)")

CRITICAL = ["solve", "critical_batch_size", "--given", "chip_flops=989e12 FLOP/s",
            "--given", "hbm_bandwidth=3.35 TB/s", "--given", "bytes_per_param=2 byte/param",
            "--given", "flops_per_param=2 FLOP/param/token",
            "--given", "total_params=671e9 param", "--given", "active_params=37e9 param"]


def _chalk(argv, folder):
    env = {**os.environ, "CHALK_CACHE_DIR": str(folder)}
    done = subprocess.run([sys.executable, "-c", RUNNER, *argv], capture_output=True,
                          text=True, env=env, timeout=300)
    err, _, flag = done.stderr.rpartition("\nsympy loaded: ")
    return done.returncode, done.stdout, err, flag == "True"


def _in_full(run_cli, monkeypatch, argv):
    """(status, stdout, stderr) of the full solver with the cache off, run in this
    process: the reference a cached run must equal to the byte. Only the runs whose
    sympy loading is asserted need a process of their own."""
    with monkeypatch.context() as patch:
        patch.setenv("CHALK_NO_CACHE", "1")
        return run_cli(*argv)


QUESTIONS = {
    "critical batch": CRITICAL,
    "critical batch as JSON": [*CRITICAL, "--json"],
    "critical batch, brief": [*CRITICAL, "--brief"],
    "sparsity from the critical batch": ["solve", "sparsity_factor", "--preset", "lecture",
                                         "--given", "critical_batch_size=2400 sequence"],
    "drain time": ["solve", "hbm_drain_time", "--given", "hbm_capacity=288 GB",
                   "--given", "hbm_bandwidth=20 TB/s"],
    "a flagged batch": ["solve", "batch_size", "--given", "tokens_per_second=30 token/s",
                        "--given", "step_time=20 ms"],
    # DeepSeek-V3's sizes and KV bytes given as numbers: a model preset brings its whole
    # architecture, whose cross-checks take differences (not cached)
    "step time through max()": ["solve", "step_time", "--preset", "h100", "--preset", "bf16",
                                "--given", "total_params=671e9 param",
                                "--given", "active_params=36.7e9 param",
                                "--given", "kv_bytes_per_token=70272 byte/token",
                                "--given", "batch_size=64 sequence",
                                "--given", "n_chips=8 chip", "--given", "context_length=4k token"],
}
# the same with a batch whose KV cache does not fit: (1,342e9 byte + 20,000 x 4,000 x 70,272
# byte) / (8 x 80e9 byte) = 10.88, and weights alone 1,342e9 / 640e9 = 2.097: each reported
# once, by its flag (issue 22)
QUESTIONS["a fill past 1"] = [a.replace("batch_size=64", "batch_size=20000")
                              for a in QUESTIONS["step time through max()"]]


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(QUESTIONS))
def test_a_repeated_question_is_answered_from_the_cache_as_the_solver_answers_it(
        tmp_path, label, run_cli, monkeypatch):
    argv = QUESTIONS[label]
    full = _in_full(run_cli, monkeypatch, argv)
    first = _chalk(argv, tmp_path)
    second = _chalk(argv, tmp_path)
    assert full[0] == first[0] == second[0] == 0
    assert first[1] == full[1] and second[1] == full[1]
    assert first[3] is True  # solved in full, and compiled for next time
    assert second[3] is False  # answered without sympy


@pytest.mark.slow
def test_new_numbers_for_a_cached_shape_give_their_own_answer(tmp_path, run_cli, monkeypatch):
    _chalk(CRITICAL, tmp_path)
    argv = ["solve", "critical_batch_size", "--given", "chip_flops=2250e12 FLOP/s",
            "--given", "hbm_bandwidth=8 TB/s", "--given", "bytes_per_param=1 byte/param",
            "--given", "flops_per_param=2 FLOP/param/token",
            "--given", "total_params=1000e9 param", "--given", "active_params=32e9 param",
            "--json"]
    _chalk(argv, tmp_path)  # the JSON form is its own shape
    status, out, _, loaded = _chalk(argv, tmp_path)
    assert status == 0 and not loaded
    # B = bytes/param · (FLOP/s / bytes/s) · (total/active) / (tokens/seq · FLOP/param/token)
    expected = 1 * (2250e12 / 8e12) * (1000e9 / 32e9) / (1 * 2)
    value = json.loads(out)["results"]["critical_batch_size"]
    assert value["unit"] == "sequence"
    assert value["value"] == pytest.approx(expected, rel=1e-12)
    assert out == _in_full(run_cli, monkeypatch, argv)[1]


@pytest.mark.slow
def test_the_regime_a_cached_max_takes_is_chosen_again_from_the_numbers(tmp_path, run_cli,
                                                                         monkeypatch):
    memory_bound = QUESTIONS["step time through max()"]
    _chalk(memory_bound, tmp_path)
    compute_bound = [a.replace("batch_size=64", "batch_size=20000")
                     .replace("n_chips=8", "n_chips=64")
                     .replace("context_length=4k", "context_length=100")
                     for a in memory_bound]
    status, out, _, loaded = _chalk(compute_bound, tmp_path)
    assert status == 0 and not loaded
    assert out == _in_full(run_cli, monkeypatch, compute_bound)[1]
    # 20,000 sequences · 2 FLOP/param/token · 36.7e9 active params over 64 H100s at
    # 989 TFLOP/s (no attention shape given: the conventions leave attention out)
    t_compute = 20000 * 2 * 36.7e9 / (64 * 989e12)
    assert f"step_time = {t_compute * 1e3:.4g} ms\n" in out
    assert "note: compute-bound (compute" in out


@pytest.mark.slow
def test_a_value_the_entry_cannot_take_goes_to_the_solver_for_its_error(tmp_path):
    _chalk(CRITICAL, tmp_path)
    bad = [a.replace("chip_flops=989e12", "chip_flops=-1") for a in CRITICAL]
    status, out, err, loaded = _chalk(bad, tmp_path)
    assert status == 2 and out == "" and loaded
    assert err.strip() == ("chalk: error: chip_flops=-1 FLOP/s is not allowed: chip_flops "
                           "must be positive")
    other_unit = [a.replace("3.35 TB/s", "3350 GB/s") for a in CRITICAL]
    status, out, _, loaded = _chalk(other_unit, tmp_path)
    assert status == 0 and loaded  # another unit is another shape: solved in full
    assert out.startswith("critical_batch_size = 5,354 sequence\n")


@pytest.mark.slow
def test_an_unreadable_entry_is_ignored(tmp_path):
    _chalk(CRITICAL, tmp_path)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text("{ not json")
    status, out, _, loaded = _chalk(CRITICAL, tmp_path)
    assert status == 0 and loaded
    assert out.startswith("critical_batch_size = 5,354 sequence\n")
    assert json.loads(entry.read_text())["format"] == cache.FORMAT  # written again whole


@pytest.mark.slow
def test_concurrent_runs_leave_one_whole_entry(tmp_path):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _chalk(CRITICAL, tmp_path), range(4)))
    assert len({r[1] for r in results}) == 1 and all(r[0] == 0 for r in results)
    entries = list(tmp_path.iterdir())
    assert len(entries) == 1 and entries[0].suffix == ".json"  # no temporary files left
    json.loads(entries[0].read_text())


def test_answers_that_could_depend_on_the_numbers_otherwise_are_not_stored(run_cli,
                                                                           tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("CHALK_CACHE_DIR", str(tmp_path))
    # a range: Monte Carlo
    assert run_cli("solve", "hbm_drain_time", "--given", "hbm_capacity=288 GB",
                   "--given", "hbm_bandwidth=10..20 TB/s")[0] == 0
    # quantities that cancel: the steps run at placeholder values
    assert run_cli("solve", "rl_tokens", "--preset", "equal_split",
                   "--given", "pretrain_tokens=15e12 token",
                   "--given", "rl_flops_per_param=6 FLOP/param/token",
                   "--given", "decode_inefficiency=3")[0] == 0
    # a target a preset states
    assert run_cli("solve", "chip_flops", "--preset", "h100")[0] == 0
    assert list(tmp_path.iterdir()) == []
    assert run_cli(*CRITICAL)[0] == 0
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_the_key_changes_with_the_sources_and_the_shape(monkeypatch):
    shape = {"command": "solve", "targets": ["critical_batch_size"]}
    first = cache.key(shape)
    assert cache.key({**shape, "targets": ["sparsity_factor"]}) != first
    monkeypatch.setattr(cache, "source_digest", lambda: "another version of the sources")
    assert cache.key(shape) != first


def test_the_digest_covers_code_relations_data_and_units():
    files = set(cache.hashed_files())
    for expected in ("chalk/cli/fast.py", "chalk.solvers/planning/plan.py",
                     "chalk.knowledge/batch.py",
                     "chalk.knowledge/data/accelerators.yaml",
                     "chalk.knowledge/deductions/lecture.toml", "chalk.symbolic/units.txt"):
        assert expected in files


# Issue 22: the cache's edges. Each test stores an entry by running the CLI in-process (the
# full solver), then asks chalk.cli.fast.answer, the cached path, for the same argv.

# Llama 3.1 8B's architecture given as numbers, and no MoE layers: the zero makes
# expert_params follow as 0, a pin at the user's layer that the user did not type
LLAMA_8B = ["solve", "total_params", "--given", "n_layers=32", "--given", "d_model=4096",
            "--given", "n_heads=32", "--given", "n_kv_heads=8", "--given", "d_head=128",
            "--given", "d_ff=14336", "--given", "vocab_size=128256",
            "--given", "untied_embeddings=1", "--given", "n_moe_layers=0", "--preset", "fp8"]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A cache of this test's own, switched on."""
    monkeypatch.setenv("CHALK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CHALK_NO_CACHE", raising=False)
    return tmp_path


def _entry(folder):
    (path,) = folder.glob("*.json")
    return path


def test_a_pin_that_follows_from_a_zero_is_cached_not_a_traceback(run_cli, folder):
    from chalk.cli.fast import answer

    status, out, err = run_cli(*LLAMA_8B)  # was ValueError: 'expert_params' is not in list
    assert (status, err) == (0, "")
    # embeddings 2 · 128,256 · 4,096 = 1,050,673,152 (untied); per layer: attention
    # 4,096·4,096 (q) + 2·4,096·1,024 (k, v: 8 heads of 128) + 4,096·4,096 (o) = 41,943,040
    # and MLP 3·4,096·14,336 = 176,160,768, so 32 · 218,103,808 = 6,979,321,856;
    # total 8,029,995,008 = 8.03e9
    assert out.startswith("total_params = 8.03e9 param\n")
    assert answer(LLAMA_8B) == out.rstrip("\n")


def test_an_entry_holds_its_notes_as_kind_and_data(run_cli, folder):
    from chalk.cli.fast import answer

    status, out, _ = run_cli(*LLAMA_8B)
    assert status == 0 and answer(LLAMA_8B) == out.rstrip("\n")
    path = _entry(folder)
    entry = json.loads(path.read_text())
    # 8 KV heads of 128 pick grouped-query attention; the careful conventions' zero
    # input-embedding table gives way to the untied vocabulary x width; the zero attention
    # copies stay (their count needs n_chips, not pinned) and, with the zero MoE layers,
    # take terms out. Each holds whatever the numbers are, so the answer is stored; the
    # notes are classified and stored by kind, not by wording.
    kinds = [n["kind"] for n in entry["notes"]]
    assert kinds == ["variant", "yielded", "absent"]
    assert entry["notes"][0]["data"]["chosen"] == ["gqa"]
    assert entry["notes"][1]["data"]["zero"] is True
    entry["notes"][1]["kind"] = "guess"  # no kind of note: the full solver answers
    path.write_text(json.dumps(cache.sealed(entry)))
    assert answer(LLAMA_8B) is None


def test_a_failure_while_storing_never_costs_the_answer(run_cli, folder, monkeypatch):
    from chalk.cli import fast

    def broken(*_):
        raise RuntimeError("a bug in freezing an entry")

    monkeypatch.setattr(fast, "_freeze", broken)
    status, out, err = run_cli(*CRITICAL)
    assert (status, err) == (0, "")
    assert out.startswith("critical_batch_size = 5,354 sequence\n")
    assert list(folder.iterdir()) == []


def test_a_value_beyond_the_caches_magnitudes_is_left_to_the_full_solver(run_cli, folder,
                                                                          monkeypatch):
    from chalk.cli.fast import answer

    argv = QUESTIONS["step time through max()"]
    assert run_cli(*argv)[0] == 0  # stored
    assert answer(argv) is not None
    tiny = [a.replace("n_chips=8 chip", "n_chips=8e-200 chip") for a in argv]
    monkeypatch.setenv("CHALK_NO_CACHE", "1")
    status, out, err = run_cli(*tiny)
    # memory-bound: (1,342e9 + 64 x 4,000 x 70,272 byte) / (8e-200 x 3.35e12 byte/s)
    # = 5.074e198 s = 58.73e192 day. The rank test at the solution used to overflow on
    # the slope of 1/x at x ~ 1e-187 and refuse it as "several physical values"
    assert (status, err) == (0, "") and out.startswith("step_time = 58.73e192 day\n")
    monkeypatch.delenv("CHALK_NO_CACHE")
    assert answer(tiny) is None  # beyond the replay's magnitudes: solved in full


def test_an_edited_number_in_an_entry_is_not_replayed(run_cli, folder):
    from chalk.cli.fast import answer

    status, out, _ = run_cli(*CRITICAL)
    assert status == 0 and answer(CRITICAL) == out.rstrip("\n")
    path = _entry(folder)
    entry = json.loads(path.read_text())
    # TB/s to B/s is 1e12: an entry saying 2e12 would halve the critical batch
    (pin,) = [g for g in entry["given"] if g["name"] == "hbm_bandwidth"]
    assert pin["factor"] == 1e12
    pin["factor"] = 2e12
    path.write_text(json.dumps(entry))
    assert answer(CRITICAL) is None
    entry.pop("digest")
    path.write_text(json.dumps(entry))
    assert answer(CRITICAL) is None


@pytest.mark.parametrize("damage", ["variables: []", "steps: {}", "a step's IR a string",
                                    "nested 100,000 deep", "a number as text"])
def test_an_entry_of_the_wrong_shape_is_ignored(run_cli, folder, damage):
    from chalk.cli.fast import answer

    assert run_cli(*CRITICAL)[0] == 0
    path = _entry(folder)
    entry = json.loads(path.read_text())
    if damage == "nested 100,000 deep":
        path.write_text("[" * 100_000 + "]" * 100_000)  # json.load hits its recursion limit
    else:
        if damage == "variables: []":
            entry["variables"] = []
        elif damage == "steps: {}":
            entry["steps"] = {}
        elif damage == "a step's IR a string":
            entry["steps"][0]["ir"] = "hbm_bandwidth"
        else:
            entry["rtol"] = "0.01"
        path.write_text(json.dumps(cache.sealed(entry)))  # a digest that matches
    assert answer(CRITICAL) is None


def test_a_fifo_where_an_entry_belongs_does_not_block(run_cli, folder):
    from chalk.cli.fast import answer

    assert run_cli(*CRITICAL)[0] == 0
    path = _entry(folder)
    path.unlink()
    os.mkfifo(path)
    with ThreadPoolExecutor(1) as pool:
        # no writer ever opens the FIFO: a blocking open would wait for ever
        future = pool.submit(answer, CRITICAL)
        try:
            assert future.result(timeout=30) is None
        finally:
            if not future.done():  # free a reader stuck in open(): fail, do not hang
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    status, out, _ = run_cli(*CRITICAL)  # the full solver answers (the FIFO stays)
    assert status == 0 and out.startswith("critical_batch_size = 5,354 sequence\n")


@pytest.mark.parametrize("home, xdg, expected", [
    ("", "", None),  # was /.cache/chalk
    ("relative/home", "", None),
    ("/home/someone", "", "/home/someone/.cache/chalk"),
    ("", "/var/cache/me", "/var/cache/me/chalk"),
    ("/home/someone", "relative", "/home/someone/.cache/chalk"),  # XDG: relative ignored
])
def test_the_cache_lives_only_where_the_environment_says_sanely(monkeypatch, home, xdg,
                                                                 expected):
    monkeypatch.delenv("CHALK_CACHE_DIR", raising=False)
    monkeypatch.delenv("CHALK_NO_CACHE", raising=False)
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    found = cache.directory()
    assert (None if found is None else str(found)) == expected
    assert cache.enabled() is (expected is not None)


@pytest.mark.parametrize("value, on", [("", True), ("0", True), ("false", True),
                                       ("no", True), ("1", False), ("true", False),
                                       ("YES", False), ("on", False)])
def test_only_a_truthy_chalk_no_cache_turns_the_cache_off(monkeypatch, folder, value, on):
    monkeypatch.setenv("CHALK_NO_CACHE", value)
    assert cache.enabled() is on  # CHALK_NO_CACHE=0 turned it off


# Issue 22 item 5: a question whose presets' defaults and headlines give way to the
# architecture. Asked cold with the cache on, it was solved in full every time: the
# architecture's steps take differences (n_moe_layers = n_layers - n_dense_layers) and the
# answer carries a note with a number in it, either of which refused the entry, although
# neither can change when nothing the user typed reaches them.
DEEPSEEK_CRITICAL = ["solve", "critical_batch_size", "--preset", "h100", "--preset", "bf16",
                     "--preset", "deepseek_v3"]
# The same kind of question with numbers typed: Llama 3.1 70B's size from its
# architecture (its steps read only the preset), the step time from the typed pins.
LLAMA_STEP = ["solve", "step_time", "--preset", "h100", "--preset", "bf16",
              "--preset", "llama_3_1_70b", "--given", "batch_size=32 sequence",
              "--given", "n_chips=8 chip", "--given", "context_length=8k token"]


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_a_question_of_presets_alone_is_answered_from_the_cache(run_cli, folder,
                                                                json_output):
    from chalk.cli.fast import answer

    argv = DEEPSEEK_CRITICAL + (["--json"] if json_output else [])
    status, out, err = run_cli(*argv)
    assert (status, err) == (0, "")
    assert len(list(folder.glob("*.json"))) == 1  # was not stored
    assert answer(argv) == out.rstrip("\n")
    if not json_output:
        # DeepSeek-V3 from its config: attention per layer 7,168·1,536 + 7,168·576
        # + 7,168·128·128 + 512·128·256 + 128·1,536·192 = 187,105,280; experts
        # 3·7,168·2,048 = 44,040,192 each, 256 in each of 61 - 3 = 58 layers:
        # 653,908,770,816; dense part 58·(44,040,192 + 7,168·256) + 61·187,105,280
        # + 3·3·18,432·7,168 + 7,168·129,280 = 16,189,947,904; active 16,189,947,904
        # + 653,908,770,816·8/256 = 36,624,596,992; total 16,189,947,904
        # + 653,908,770,816 + 926,679,040 = 671,025,397,760. Critical batch
        # 2 byte/param · (989/3.35) FLOP/byte · (671,025,397,760/36,624,596,992)
        # / (1 token/sequence · 2 FLOP/param/token) = 295.22 · 18.322 = 5,409
        assert out.startswith("critical_batch_size = 5,409 sequence\n")


def test_steps_that_read_only_presets_are_cached_and_typed_numbers_replayed(run_cli,
                                                                           folder):
    from chalk.cli.fast import answer

    status, out, err = run_cli(*LLAMA_STEP)
    assert (status, err) == (0, "")
    assert answer(LLAMA_STEP) == out.rstrip("\n")  # was not stored
    # other typed numbers are replayed through the stored trees, as the solver answers
    other = [a.replace("batch_size=32", "batch_size=7").replace("8k token", "3k token")
             for a in LLAMA_STEP]
    cached = answer(other)
    status, out, err = run_cli(*other)
    assert status == 0 and cached == out.rstrip("\n")


def test_a_difference_a_typed_number_reaches_is_stored_and_measured_at_replay(run_cli,
                                                                            folder):
    # DeepSeek-V3's parameters read per step: total - routed experts left unread, where
    # the unread share (1 - 8/256)**tokens_per_step follows from the typed batch. Once kept
    # out (the conditioning of that difference depends on the numbers); now stored, its
    # conditioning measured again at each replay, and the cached answer is the solver's
    from chalk.cli.fast import answer

    deepseek = ["solve", "tokens_per_second", "--preset", "h200", "--preset", "fp8",
                "--preset", "deepseek_v3", "--given", "batch_size=64 sequence",
                "--given", "n_chips=8 chip", "--given", "context_length=4k token"]
    assert run_cli(*deepseek)[0] == 0
    assert len(list(folder.iterdir())) == 1
    other = [a.replace("batch_size=64", "batch_size=7") for a in deepseek]
    cached = answer(other)
    status, out, _ = run_cli(*other)
    assert status == 0 and cached == out.rstrip("\n")


def _uncached(run_cli, monkeypatch, argv):
    monkeypatch.setenv("CHALK_NO_CACHE", "1")
    try:
        return run_cli(*argv)
    finally:
        monkeypatch.delenv("CHALK_NO_CACHE")


def test_extra_kv_copies_from_typed_chips_replay_where_the_solver_is_silent(
        run_cli, folder, monkeypatch):
    # kv_extra_copies = t * kv_elements_per_chip / kv_elements_per_layer - 1, a difference
    # that follows the typed n_chips (was: not stored at all). Llama 3.1 70B has 8 KV
    # heads of 128: 2 * 8 * 128 = 2,048 elements a layer. On 16 chips (one Megatron
    # group) a chip holds max(1, 8/16) = 1 head, 2 * 128 = 256 elements, so
    # 16 * 256 / 2,048 - 1 = 1 extra copy, 2 in all: well conditioned, (16*256/2048) /
    # 1 = 2 at most, and the cache answers as the solver does
    from chalk.cli.fast import answer

    assert run_cli(*LLAMA_STEP)[0] == 0  # stored at 8 chips: 8 * 1 * 256 / 2,048 - 1 = 0
    sixteen = [a.replace("n_chips=8 chip", "n_chips=16 chip") for a in LLAMA_STEP]
    cached = answer(sixteen)
    status, out, err = _uncached(run_cli, monkeypatch, sixteen)
    assert (status, err) == (0, "") and cached == out.rstrip("\n")
    assert "kv_cache_copies = 1 + kv_extra_copies\n       = 1 + (1)\n       = 2" in out


@pytest.mark.parametrize("chips, refused", [("8.0000001", False), ("8.000000001", True)])
def test_extra_kv_copies_that_cancel_are_handed_back_to_the_solver(
        run_cli, folder, monkeypatch, chips, refused):
    # Just past 8 chips the difference cancels: t/8 - 1 = 1e-7/8 = 1.25e-8, and a relative
    # change in t (or in the 2,048 elements) moves it (t/8) / 1.25e-8 = 8e7 times as much,
    # past the solver's warning (1e5); 1.25e-10 gives 8e9, past its refusal (1e9). The
    # cache has nothing to say of either: the full solve warns or refuses, in its words
    from chalk.cli.fast import answer

    assert run_cli(*LLAMA_STEP)[0] == 0
    near = [a.replace("n_chips=8 chip", f"n_chips={chips} chip") for a in LLAMA_STEP]
    assert answer(near) is None
    status, out, err = _uncached(run_cli, monkeypatch, near)
    assert run_cli(*near) == (status, out, err)  # through the cache's front door too
    if refused:
        assert status == 2 and "cannot pin down kv_extra_copies" in err
    else:
        assert status == 0 and "kv_extra_copies 8e+07 times as much" in out


def test_a_typed_number_with_no_note_quoting_one_is_stored(run_cli, folder):
    # The critical batch with a typed bandwidth once carried "memory_fill not reported:
    # the KV bytes come out 0", a note quoting a number, and was kept out. Without
    # n_chips the pins fix no memory fill, so nothing is reported, no note quotes a
    # number, and every step the typed number reaches goes one way: the entry is stored
    assert run_cli(*DEEPSEEK_CRITICAL, "--given", "hbm_bandwidth=4 TB/s")[0] == 0
    assert len(list(folder.iterdir())) == 1


def test_an_entry_holds_the_trees_that_ran_to_the_bit(run_cli, folder):
    # replaying the stored trees at the stored pins gives the full solve's own values,
    # bit for bit: the cache holds what the engine evaluated, not a re-derivation
    from chalk.symbolic.ir import evaluate_ir

    from chalk import api

    assert run_cli(*LLAMA_STEP)[0] == 0
    entry = json.loads(_entry(folder).read_text())
    solved = api.solve(["step_time"], [a for a in LLAMA_STEP if "=" in a],
                       ["h100", "bf16", "llama_3_1_70b"]).derivation.values
    env = {name: solved[name] for name in solved if name not in
           {step["variable"] for step in entry["steps"]}}
    assert entry["steps"]
    for step in entry["steps"]:
        env[step["variable"]] = evaluate_ir(step["ir"], env)
        assert env[step["variable"]] == solved[step["variable"]], step["variable"]


def test_a_step_whose_form_cancels_the_typed_numbers_is_the_same_at_every_replay():
    # Regression: one attention group computes its extra copies as
    # (n_chips - n_chips / 1) x layers x params / (n_chips / 1) = 0 whatever the chips; read
    # through its inputs the step seemed to follow the typed n_chips, and its difference
    # kept the Llama step-time question out of the cache.
    from types import SimpleNamespace

    from sympy import symbols

    from chalk.cli.fast import _varying

    n, groups, tp, layers, params = symbols(
        "n_chips attention_data_parallelism attention_tensor_parallelism n_layers "
        "attention_layer_params", positive=True)
    records = [
        SimpleNamespace(variables=("attention_tensor_parallelism",),
                        inputs=("attention_data_parallelism", "n_chips"),
                        expression=n / groups),
        SimpleNamespace(variables=("replicated_attention_params",),
                        inputs=("attention_layer_params", "attention_tensor_parallelism",
                                "n_chips", "n_layers"),
                        expression=(n - tp) * layers * params / tp),
        SimpleNamespace(variables=("weight_fill",), inputs=("n_chips", "n_layers"),
                        expression=layers / n),
    ]
    varying = _varying(records, ["n_chips"])
    # (n - n/g) / (n/g) = g - 1: the chips cancel; the chips of a group and the fill do not
    assert varying == {"n_chips", "attention_tensor_parallelism", "weight_fill"}
    # a difference that does not cancel still follows the chips
    records[0] = SimpleNamespace(variables=("attention_tensor_parallelism",),
                                 inputs=("n_layers",), expression=layers)
    assert "replicated_attention_params" in _varying(records, ["n_chips"])
