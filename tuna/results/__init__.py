"""Results out and in: export_db, golden versions, import_db and merge_db.

* :mod:`~tuna.results.formats`: MIOpen's find, perf and kernel db grammar (values in, values out);
* :mod:`~tuna.results.dbfiles`: those files on disk, read and written atomically;
* :mod:`~tuna.results.rows`: a session's or golden version's rows, streamed;
* :mod:`~tuna.results.validate`: the checks every exported row passes;
* :mod:`~tuna.results.export`: ``export_db``, with :mod:`~tuna.results.manifest` beside it;
* :mod:`~tuna.results.golden`: immutable golden versions (``update_golden``);
* :mod:`~tuna.results.importdb`: MIOpen db files into a session (``import_db``);
* :mod:`~tuna.results.merge`: one db file layered over another (``merge_db``).
"""
