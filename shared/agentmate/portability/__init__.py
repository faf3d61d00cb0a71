"""Account portability (issue 25 §4): an account's data, whole, out to an archive and back into an empty account.

Above the domains (the import contract's layer of its own): it reads and writes every domain's tables it covers,
through one table catalogue (``archive.py``), so no domain knows of it. The archive format is
``docs/account-archive.md``. Exports and imports run as jobs (``jobs.py``); the archive lives in object storage
(``storage.py``: S3 in Lambda, a folder with HMAC-signed loopback links locally).
"""
