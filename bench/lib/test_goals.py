"""The lines that say whether a bench run meets a speed goal, and the pooled verdict over
many runs (lib/pool.py), checked on made-up figures: they are what a session reads to call a
speed goal met, so a slip in them (the wrong peer, the plain rows judged where the -pgo ones
were meant, a median of an even count, an interval that ignores how runs differ) would pass
unseen in a table of plausible numbers.

    python3 bench/lib/test_goals.py       (test.sh runs it; prints "N passed, M failed")
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pool  # noqa: E402
from report import deploy_goal_line, per_round, round_ratios  # noqa: E402
import oha  # noqa: E402
from scenarios import SCENARIOS, GrpcUnary, HttpFilters, HttpGzip, HttpOneConn, HttpSmall, h2load_log_percentiles  # noqa: E402

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

    def test_a_ratio_next_to_the_bound_shows_three_decimals(self):
        sc = HttpFilters(OPTS)
        self.assertIn("not met (weir-chain is 1.104 × weir)", sc.goal_line(med(weir=10.0, weir_chain=11.04)))
        self.assertIn("**met** (weir-chain is 1.096 × weir)", sc.goal_line(med(weir=10.0, weir_chain=10.96)))
        self.assertIn("(weir-chain is 1.10 × weir)", sc.goal_line(med(weir=10.0, weir_chain=11.0)))
        self.assertIn("(weir-chain is 1.06 × weir)", sc.goal_line(med(weir=10.0, weir_chain=10.6)))
        line = GrpcUnary(OPTS).goal_line(med(weir=8.04, haproxy=10.0))
        self.assertIn("not met (weir's CPU is 0.804 × haproxy's)", line)

    def test_per_round_ratios_of_both_builds(self):
        res = rounds({"weir": 10.0, "weir-chain": 12.0, "weir-pgo": 10.0, "weir-chain-pgo": 10.0},
                     {"weir": 10.0, "weir-chain": 10.0, "weir-pgo": 10.0, "weir-chain-pgo": 11.0})
        lines = HttpFilters(OPTS).notes(res)
        self.assertEqual(len(lines), 2)
        self.assertIn("weir-chain's CPU ÷ weir's: 1.20 1.00 (median 1.10)", lines[0])
        self.assertIn("weir-chain-pgo's CPU ÷ weir-pgo's: 1.00 1.10 (median 1.05)", lines[1])


class GzipGoal(unittest.TestCase):
    def test_each_level_against_nginx_with_its_rounds(self):
        res = rounds({"weir gzip-1": 9.0, "nginx gzip-1": 10.0, "weir gzip-6": 21.0, "nginx gzip-6": 20.0},
                     {"weir gzip-1": 8.0, "nginx gzip-1": 10.0, "weir gzip-6": 19.0, "nginx gzip-6": 20.0})
        res["medians"] = med(**{"weir gzip-1": 8.5, "nginx gzip-1": 10.0, "weir gzip-6": 20.0, "nginx gzip-6": 20.0})
        lines = HttpGzip(OPTS).notes(res)
        self.assertIn("gzip level 1: CPU/resp ≤ nginx's: **met**", lines[0])
        self.assertIn("0.85 ×; per round 0.90 0.80)", lines[0])
        self.assertIn("gzip level 6", lines[1])
        self.assertIn("per round 1.05 0.95)", lines[1])


class DeployGoal(unittest.TestCase):
    def test_judged_on_the_pgo_rows(self):
        m = med(weir=10.0, weir_pgo=9.0, weir_chain=12.0, weir_chain_pgo=9.5)
        plain = HttpFilters(OPTS).goal_line(m)
        deploy = deploy_goal_line(HttpFilters(OPTS), m)
        self.assertIn("not met (weir-chain is 1.20 × weir)", plain)
        self.assertIn("**met** (weir-chain is 1.06 × weir)", deploy)
        self.assertTrue(deploy.startswith("Goal on the build to deploy (release/pgo.sh"))

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


class Paced(unittest.TestCase):
    """The paced scenarios: what oha's and h2load's outputs are read as, and a rate not held."""

    def test_oha_report(self):
        # the shape of `oha --output-format json` (times in seconds)
        report = {"summary": {"successRate": 1.0, "total": 10.002, "requestsPerSec": 29990.1},
                  "latencyPercentiles": {"p10": 0.0001, "p50": 0.00021, "p90": 0.0004, "p99": 0.0012,
                                         "p99.9": 0.0051, "p99.99": 0.009},
                  "statusCodeDistribution": {"200": 299_000, "502": 2},
                  "errorDistribution": {"connection closed before message completed": 3,
                                        "aborted due to deadline": 50}}
        r = oha.summary(report, 30000, 10)
        self.assertEqual((r["ok"], r["failed"], r["aborted"]), (299_000, 5, 50))
        self.assertAlmostEqual(r["rps"], 29_900)
        self.assertAlmostEqual(r["held"], 0.99667, places=4)
        self.assertAlmostEqual(r["p50_ms"], 0.21)
        self.assertAlmostEqual(r["p99_ms"], 1.2)
        self.assertAlmostEqual(r["p999_ms"], 5.1)
        empty = oha.summary({}, 1000, 10)
        self.assertEqual((empty["ok"], empty["failed"], empty["p99_ms"]), (0, 0, None))

    def test_oha_is_an_open_loop(self):
        import os
        os.environ["BENCH_OHA"] = sys.executable  # any executable: only the argv is looked at
        argv = oha.args("http://127.0.0.1:1/small", 10000, 50, 10, http2=True)
        for flag in ("--latency-correction", "-w", "--http2"):
            self.assertIn(flag, argv)
        self.assertEqual(argv[argv.index("-q") + 1], "10000")
        self.assertEqual(argv[argv.index("-c") + 1], "50")

    def test_h2load_log(self):
        lines = [f"1700000000{i:06d}\t200\t{100 + i}" for i in range(1000)]
        lines += ["1700000001000000\t503\t1", "1700000001000001\t-1\t5"]
        r = h2load_log_percentiles("\n".join(lines) + "\n")
        self.assertEqual(r["count"], 1000)
        self.assertEqual((r["p50_ms"], r["p99_ms"], r["p999_ms"]), (0.599, 1.089, 1.098))
        self.assertEqual(h2load_log_percentiles(""), {"count": 0})

    def test_goal_needs_cpu_p99_and_the_rate(self):
        sc = SCENARIOS["h2-rate-30k"](OPTS)
        m = med(weir=8.0, haproxy=10.0, nginx=12.0)
        for row, p99, held in (("weir", 0.9, 1.0), ("haproxy", 1.0, 1.0), ("nginx", 1.1, 0.8)):
            m[row].update(p99_ms=p99, held=held)
        line = sc.goal_line(m)
        self.assertIn("**met**", line)
        self.assertIn("Rate not held by nginx.", line)
        m["weir"]["held"] = 0.9
        self.assertIn("not met (rate not held)", sc.goal_line(m))
        m["weir"]["held"], m["weir"]["p99_ms"] = 1.0, 1.05
        self.assertIn("not met", sc.goal_line(m))
        self.assertIn("p99 1.05 × haproxy's", sc.goal_line(m))
        # a closed loop of one has no rate to hold
        self.assertNotIn("Rate", HttpOneConn(OPTS).goal_line(med(weir=8.0, haproxy=10.0)))

    def test_short_runs_are_named(self):
        res = {"rounds": [{"round": 1, "proxy": "weir", "rps": 29_950.0, "held": 0.998},
                          {"round": 1, "proxy": "nginx", "rps": 21_000.0, "held": 0.7}]}
        lines = SCENARIOS["h2-rate-30k"](OPTS).notes(res)
        self.assertIn("**Rate not held**", lines[0])
        self.assertIn("nginx round 1 21000/s", lines[0])
        self.assertNotIn("weir round", lines[0])
        res["rounds"].pop()
        self.assertIn("Every run held 30,000 req/s", SCENARIOS["h2-rate-30k"](OPTS).notes(res)[0])


class Pooled(unittest.TestCase):
    """bench/lib/pool.py: a bound judged on many runs' rounds, not on one run."""

    def test_ratios_of_rounds_where_both_rows_ran(self):
        res = rounds({"weir": 10.0, "weir-chain": 11.0}, {"weir": 10.0}, {"weir": 8.0, "weir-chain": 10.0})
        self.assertEqual(per_round(res, "weir-chain", "weir"), [1.1, 1.25])

    def test_interval_is_seeded_and_holds_the_median(self):
        runs = [[1.0, 1.02, 1.04], [1.05, 1.07, 1.09], [0.98, 1.0, 1.03]]
        lo, hi = pool.interval(runs, resamples=400)
        self.assertEqual((lo, hi), pool.interval(runs, resamples=400))
        self.assertLessEqual(lo, 1.03)
        self.assertGreaterEqual(hi, 1.03)
        self.assertEqual(pool.interval([[1.0, 1.0], [1.0]], resamples=50), (1.0, 1.0))

    def test_a_disturbed_run_widens_the_interval(self):
        calm = [[1.02, 1.04, 1.05]] * 6
        _, hi_calm = pool.interval(calm, resamples=400)
        _, hi = pool.interval(calm + [[1.3, 1.4, 1.5]] * 2, resamples=400)
        self.assertGreater(hi, hi_calm)

    def test_verdicts(self):
        self.assertIn("at or under 1.1 with 95 % confidence", pool.verdict(1.02, 1.1, 1.1))
        self.assertIn("over 1.1 with 95 % confidence", pool.verdict(1.11, 1.2, 1.1))
        self.assertIn("not decided at 1.1", pool.verdict(1.05, 1.11, 1.1))

    def test_report(self):
        runs = [pool.Run("a", "x", [1.0, 1.2]), pool.Run("b", "x", [1.05]), pool.Run("c", "x", [])]
        lines = pool.report(runs, "weir-chain", "weir", 1.1)
        self.assertIn("pooled over 2 run(s), 3 rounds", lines[0])
        self.assertIn("pooled median 1.050", lines[-1])
        self.assertIn("67 % of rounds at or under 1.1", lines[-1])
        one = pool.report(runs[:1], "weir-chain", "weir", None)
        self.assertIn("(one run: no interval)", one[-1])
        self.assertEqual(pool.report(runs[2:], "weir-chain", "weir", 1.1),
                         ["weir-chain ÷ weir: no run has both rows."])

    def test_runs_read_from_their_directories(self):
        import contextlib
        import io
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for name, chain in (("a", 10.5), ("b", 10.4)):
                (Path(tmp) / name).mkdir()
                res = rounds({"weir-pgo": 10.0, "weir-chain-pgo": chain}, {"weir-pgo": 10.0, "weir-chain-pgo": chain})
                meta = {"versions": {"weir": "abc", "weir-pgo": "release/pgo.sh build of 2026-11-29 14:55"}}
                (Path(tmp) / name / "results.json").write_text(
                    json.dumps({"meta": meta, "scenarios": {"http-filters": res}}))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = pool.main(["http-filters", "weir-chain-pgo/weir-pgo", "--bound", "1.1",
                                str(Path(tmp) / "a"), str(Path(tmp) / "b")])
        self.assertEqual(rc, 0)
        text = out.getvalue()
        self.assertIn("pooled over 2 run(s), 4 rounds", text)
        self.assertIn("a  weir release/pgo.sh build of 2026-11-29 14:55  2 rounds, median 1.050", text)
        self.assertIn("at or under 1.1 with 95 % confidence", text)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(pool.main(["http-filters", "weir-chain-pgo/weir-pgo", "--bound"]), 2)

    def test_which_build(self):
        v = {"weir": "abc (binary built 10:00)", "weir-pgo": "release/pgo.sh build of 2026-11-29 14:55"}
        self.assertEqual(pool.which(v, "weir-chain"), "abc (binary built 10:00)")
        self.assertEqual(pool.which(v, "weir-chain-pgo"), "release/pgo.sh build of 2026-11-29 14:55")
        self.assertIn("not recorded", pool.which({"weir": "abc"}, "weir-pgo"))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
