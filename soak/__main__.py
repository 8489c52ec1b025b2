"""``make soak`` (``python -m soak``): the real operator under a realistic workload and
injected faults, then the archive compared with the ground truth.

Prints the seed, the faults as they are injected, one line per violation and a summary.
Exit status: 0 without a violation, 1 with one (or when the soak cannot run), 2 for bad
arguments.
"""

import argparse
import asyncio
import math
import random
import sys

from soak import faults
from soak.run import Options, soak
from testbed.mariadb import MariaDBUnavailable

# A reconciliation less often than this would not finish within any sensible settling.
RESYNC_LIMIT = 3600


def _positive(text: str) -> float:
    value = float(text)
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number more than 0: {text}")
    return value


def _not_negative(text: str) -> float:
    value = float(text)
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more: {text}")
    return value


def _resync(text: str) -> int:
    value = int(text)
    if not 1 <= value <= RESYNC_LIMIT:
        raise argparse.ArgumentTypeError(f"must be 1 to {RESYNC_LIMIT}: {text}")
    return value


def parse(argv: list[str]) -> Options:
    """The options of the command line; exits with status 2 when they are bad."""
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=_positive, default=defaults.minutes, help="workload time")
    parser.add_argument("--seed", type=int, default=None, help="random by default; printed")
    parser.add_argument("--jobs-per-minute", type=_positive, default=defaults.jobs_per_minute)
    parser.add_argument(
        "--faults-per-minute", type=_not_negative, default=defaults.faults_per_minute
    )
    parser.add_argument(
        "--resync",
        type=_resync,
        default=defaults.resync,
        metavar="SECONDS",
        help="JOBARCHIVE_RESYNC_INTERVAL of the operator",
    )
    parser.add_argument(
        "--lag",
        type=_positive,
        default=defaults.lag,
        help="seconds of healthy time after which a state must be recorded",
    )
    parser.add_argument(
        "--catch-up",
        type=_not_negative,
        default=defaults.catch_up,
        help="seconds after each fault before the time is healthy again",
    )
    parser.add_argument(
        "--settle",
        type=_not_negative,
        default=defaults.settle,
        help="longest wait after the workload for the archive to match",
    )
    parser.add_argument(
        "--event-ttl", type=_positive, default=defaults.event_ttl, help="seconds Events live"
    )
    parser.add_argument("--keep", action="store_true", help="keep the operators' logs")
    args = parser.parse_args(argv)
    return Options(
        minutes=args.minutes,
        seed=args.seed if args.seed is not None else random.randrange(2**31),
        jobs_per_minute=args.jobs_per_minute,
        faults_per_minute=args.faults_per_minute,
        resync=args.resync,
        lag=args.lag,
        catch_up=args.catch_up,
        settle=args.settle,
        event_ttl=args.event_ttl,
        keep=args.keep,
    )


def main(argv: list[str]) -> int:
    """Run a soak from the command line; the exit status."""
    options = parse(argv)
    try:
        summary = asyncio.run(soak(options, lambda line: print(line, flush=True)))
    except MariaDBUnavailable as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 1
    unfaulted = [kind for kind in faults.TYPES if not summary.faults[kind]]
    if unfaulted and options.faults_per_minute * options.minutes >= len(faults.TYPES):
        # The plan holds every type when it has room for each: one missing proves less.
        print(f"soak: no {', '.join(unfaulted)} fault was injected", file=sys.stderr)
        return 1
    return 1 if summary.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
