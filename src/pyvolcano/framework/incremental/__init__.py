"""The incremental layer: everything a session carries over to the next one (issue 15, issue 27).

It sits beside the one-way flow objects -> cache -> snapshot -> session -> result -> applier -> writer: the cache
keeps the layer's state between sessions without looking inside, the snapshot hands it to the session, and the
session asks it what it may leave alone and tells it what to carry.  Nothing here imports the cache, the session,
the plugins or the actions (``tests/test_imports.py``).

* ``state``: ``IncrementalState``, the one object the cache keeps for the layer, and ``SnapshotCarry``, the
  snapshot's one carry field; values plugins carry under typed ``CarryKey`` slots;
* ``plan``: one session's plan (settled, parked and blocked jobs left alone, the jobs to schedule) and what its
  close hands over (``Closer``);
* ``records``: a job's close counts and the settled record carried for a job left alone;
* ``contracts``: what plugins and actions declare so that these shortcuts may apply to them;
* ``memo``: the blocked-job memo (jobs refused or left unplaced under the same fingerprint are skipped);
* ``carry``: per-job values carried while a job is unchanged;
* ``deltas``: maps moved by the few jobs that join or leave them (``SettledView``, ``Lender``, ``CHECK``).
"""
