"""`python -m rowfuse.bench`: the Python benchmark host (rowfuse.bench.harness)."""

from rowfuse.bench.harness import main

raise SystemExit(main())
