"""Paths through steps with several solutions (solvers.execution.paths), on a plan stood in for by
a function of the choices made so far."""

from chalk.solvers.execution.paths import explore
from chalk.symbolic.errors import AmbiguousSolution, NoSolution


def _two_forks(choices):
    # step 0 has two solutions, and after the second of them step 2 has three; the path
    # through step 0's first solution has no solution further down
    if 0 not in choices:
        raise AmbiguousSolution("x", ["1", "2"], "pin x", step=0, count=2)
    if choices[0] == 0:
        raise NoSolution("y", "negative")
    if 2 not in choices:
        raise AmbiguousSolution("z", ["1", "2", "3"], "pin z", step=2, count=3)
    return (choices[0], choices[2])


def test_every_path_is_followed_breadth_first():
    paths = list(explore(_two_forks))
    # 1 + 2 + 3 paths: the fork at step 0, its two solutions, the three after the second
    assert [p.choices for p in paths] == [{}, {0: 0}, {0: 1}, {0: 1, 2: 0}, {0: 1, 2: 1},
                                          {0: 1, 2: 2}]
    assert [p.forked for p in paths] == [True, False, True, False, False, False]
    assert isinstance(paths[1].error, NoSolution)
    assert [p.result for p in paths[3:]] == [(1, 0), (1, 1), (1, 2)]


def test_a_fork_beyond_the_limit_is_the_path_s_error():
    # with at most 4 paths, the second fork (3 more on top of 3) is not followed
    paths = list(explore(_two_forks, limit=4))
    assert [p.choices for p in paths] == [{}, {0: 0}, {0: 1}]
    assert isinstance(paths[2].error, AmbiguousSolution) and not paths[2].forked
