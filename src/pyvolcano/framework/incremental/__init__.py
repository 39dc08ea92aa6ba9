"""The incremental layer: everything a session carries over to the next one (issue 15, issue 27).

It sits beside the one-way flow objects -> cache -> snapshot -> session -> result -> applier -> writer: the cache
keeps the layer's state between sessions without looking inside, the snapshot hands it to the session, and the
session asks it what it may leave alone and tells it what to carry.  Nothing here imports the cache, the session,
the plugins or the actions (``tests/test_imports.py``).

* ``contracts``: what plugins and actions declare so that the shortcuts below may apply to them;
* ``memo``: the blocked-job memo (jobs refused or left unplaced under the same fingerprint are skipped);
* ``carry``: per-job values carried while a job is unchanged;
* ``deltas``: maps moved by the few jobs that join or leave them (``SettledView``, ``Lender``, ``CHECK``).
"""
