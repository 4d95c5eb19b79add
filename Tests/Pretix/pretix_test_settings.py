"""pretix's own settings (pretix.settings, from the test's pretix.cfg), with SQLite's transactions
taking the database's write lock when they begin. Not a test module.

pretix runs on SQLite here (it supports SQLite for testing only; production is PostgreSQL, whose row
locks make a second writer wait). With Django's default, a transaction begins DEFERRED: it reads
first and asks for the write lock at its first write. When another connection holds that lock then
(Orchard's webhook, say `payment.refunded` for the refund pretix's request has just made, arriving
while the request goes on to cancel the order), SQLite cannot let the reader wait without risking a
deadlock and fails its write at once with "database is locked": the pretix request answers 500.
BEGIN IMMEDIATE takes the lock first, so the second writer waits (up to `timeout` seconds) instead."""

from pretix.settings import *  # noqa: F401,F403
from pretix.settings import DATABASES

if "sqlite" in DATABASES["default"]["ENGINE"]:
    DATABASES["default"]["OPTIONS"] = {**DATABASES["default"].get("OPTIONS", {}), "transaction_mode": "IMMEDIATE",
                                       "timeout": 30}
