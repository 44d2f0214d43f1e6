"""What the tests share, imported as ordinary modules (a conftest is never imported).

* :mod:`tests.support.seed`: databases at the head revision (``open_test_db``, the one migration
  path, used by the ``db`` and ``lite`` fixtures) and a noop session with jobs (``seed``).
* :mod:`tests.support.databases`: migrated once per process, then copied (SQLite) or reused
  from a pool (MySQL: ``mysql_db``), so that a test does not pay for a migration.
* :mod:`tests.support.wait`: ``wait_until``, polling a condition with a deadline that fails loudly.
* :mod:`tests.support.clock`: ``FakeClock`` for logic that is about time, also as the database
  clock of a SQLite database (``on_fake_clock``: leases expire without waiting).
* :mod:`tests.support.isolation`: the guard that fails a test which opens a file outside the repo.
"""
