"""The lines that say whether a bench run meets an issue's goal, checked on made-up medians:
they are what a session reads to call a speed goal met, so a slip in them (the wrong peer,
the plain rows judged where the -pgo ones were meant, a median of an even count) would pass
unseen in a table of plausible numbers.

    python3 bench/lib/test_goals.py       (test.sh runs it; prints "N passed, M failed")
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import deploy_goal_line, round_ratios  # noqa: E402
from scenarios import GrpcUnary, HttpFilters, HttpSmall  # noqa: E402

OPTS = {"seconds": 10, "rounds": 3}


def med(**rows: float) -> dict:
    """Medians by row: CPU per unit, as `cpu_total`."""
    return {name.replace("_", "-"): {"cpu_total": cpu} for name, cpu in rows.items()}


def rounds(*per_round: dict) -> dict:
    """A scenario's results with these rounds (each row's CPU per unit)."""
    return {"rounds": [{"round": i, "proxy": p, "cpu_total": c}
                       for i, r in enumerate(per_round) for p, c in r.items()]}


class PeerGoal(unittest.TestCase):
    def test_judged_against_the_better_peer(self):
        sc = GrpcUnary(OPTS)
        line = sc.goal_line(med(weir=8.0, haproxy=10.0, nginx=20.0))
        self.assertIn("**met**", line)
        self.assertIn("0.80 × haproxy's", line)
        line = sc.goal_line(med(weir=8.1, haproxy=10.0, nginx=20.0))
        self.assertIn("not met", line)

    def test_a_peer_that_did_not_run_is_left_out(self):
        line = GrpcUnary(OPTS).goal_line(med(weir=15.0, nginx=20.0))
        self.assertIn("0.75 × nginx's", line)
        self.assertIsNone(GrpcUnary(OPTS).goal_line(med(weir=15.0)))

    def test_p99_counts_where_the_goal_says_so(self):
        m = med(weir=8.0, haproxy=12.0, nginx=11.0)
        m["weir"]["p99_ms"], m["haproxy"]["p99_ms"], m["nginx"]["p99_ms"] = 1.2, 1.0, 1.1
        line = HttpSmall(OPTS).goal_line(m)
        self.assertIn("not met", line)
        self.assertIn("p99 1.20 × haproxy's", line)


class FilterGoal(unittest.TestCase):
    def test_chain_against_route(self):
        sc = HttpFilters(OPTS)
        self.assertIn("**met**", sc.goal_line(med(weir=10.0, weir_chain=11.0)))
        self.assertIn("not met", sc.goal_line(med(weir=10.0, weir_chain=11.1)))
        self.assertIsNone(sc.goal_line(med(weir=10.0)))

    def test_per_round_ratios_of_both_builds(self):
        res = rounds({"weir": 10.0, "weir-chain": 12.0, "weir-pgo": 10.0, "weir-chain-pgo": 10.0},
                     {"weir": 10.0, "weir-chain": 10.0, "weir-pgo": 10.0, "weir-chain-pgo": 11.0})
        lines = HttpFilters(OPTS).notes(res)
        self.assertEqual(len(lines), 2)
        self.assertIn("weir-chain's CPU ÷ weir's: 1.20 1.00 (median 1.10)", lines[0])
        self.assertIn("weir-chain-pgo's CPU ÷ weir-pgo's: 1.00 1.10 (median 1.05)", lines[1])


class DeployGoal(unittest.TestCase):
    def test_judged_on_the_pgo_rows(self):
        m = med(weir=10.0, weir_pgo=9.0, weir_chain=12.0, weir_chain_pgo=9.5)
        plain = HttpFilters(OPTS).goal_line(m)
        deploy = deploy_goal_line(HttpFilters(OPTS), m)
        self.assertIn("not met (weir-chain is 1.20 × weir)", plain)
        self.assertIn("**met** (weir-chain is 1.06 × weir)", deploy)
        self.assertTrue(deploy.startswith("Goal (issue 26) on the build to deploy (release/pgo.sh"))

    def test_peers_stay_as_they_ran(self):
        m = med(weir=17.0, weir_pgo=15.0, haproxy=20.0)
        self.assertIn("not met", GrpcUnary(OPTS).goal_line(m))
        self.assertIn("**met** (weir's CPU is 0.75 × haproxy's)", deploy_goal_line(GrpcUnary(OPTS), m))

    def test_none_without_pgo_rows(self):
        self.assertIsNone(deploy_goal_line(HttpFilters(OPTS), med(weir=10.0, weir_chain=10.5)))


class RoundRatios(unittest.TestCase):
    def test_median_of_odd_and_even_counts(self):
        goal = (0.8, ("haproxy",), False)
        odd = rounds({"weir": 8.0, "haproxy": 10.0}, {"weir": 9.0, "haproxy": 10.0},
                     {"weir": 7.0, "haproxy": 10.0})
        self.assertEqual(round_ratios(odd, goal), "Per round, weir's CPU ÷ haproxy's 0.80 0.90 0.70 (median 0.80).")
        even = rounds({"weir": 8.0, "haproxy": 10.0}, {"weir": 9.0, "haproxy": 10.0})
        self.assertIn("(median 0.85)", round_ratios(even, goal))
        self.assertIn("÷ haproxy's 0.80 0.90", round_ratios(even, goal, "weir"))

    def test_nothing_to_say(self):
        self.assertIsNone(round_ratios(rounds({"weir": 8.0, "haproxy": 10.0}), (0.8, ("haproxy",), False)))
        self.assertIsNone(round_ratios(rounds({"weir": 8.0}), None))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
