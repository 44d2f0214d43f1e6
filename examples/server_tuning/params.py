# The server-tuning example: reference/search.md section 1's worked example, on a server that
# runs here. "Bisect the server's target QPS upwards while runs are VALID, and before stepping
# QPS down try more inference streams, then smaller batch sizes" becomes: bisect sysbench's
# target transaction rate upwards while the run's p95 latency stays under a bound, and before
# giving up on a rate try more client threads, then a less durable log flush (a server
# setting: a rebuild, i.e. a restart of the instance with another my.cnf).
#
# The searcher sets every parameter, so they are declared with empty lists; the base config
# (base.json) holds the starting values and the bound.
from tuna.search import Bisect, Composer, Step

innodb_flush_log_at_trx_commit = []  # build-time: written to my.cnf, applied by a restart
threads = []  # runtime: sysbench --threads
rate = []  # runtime: sysbench --rate (target transactions/s)


def META_get_no_rebuild_params():
    return ["threads", "rate"]


def _under_bound(run):
    """A run counts when it finished, printed its p95 latency and stayed under the bound."""
    p95 = run.stats.get("p95_ms")
    return run.valid and p95 is not None and p95 <= run.config["p95_bound_ms"]


def META_search_callback():
    return Composer(
        [
            Bisect("rate", 25, 1000, 25, predicate=_under_bound),
            Step("threads", 1, 4, lambda t: t * 2),
            Step("innodb_flush_log_at_trx_commit", 1, 2, lambda f: f + 1),
        ],
        timeout=12,
    )
