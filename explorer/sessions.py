"""Sessions kept in the database and read through the shared cache (Redis), which may fail.

Django's cached_db engine reads a session from the cache and, on a miss, from the database.
Some of its cache calls are guarded (a failed read counts as a miss, a failed write is
logged), but refilling the cache after a miss, asking whether a key exists and deleting a
session at log-out are not: with Redis down, or silent past its socket timeout
(settings.CACHE_REDIS_TIMEOUT_S), every page a logged-in user opens fails. This engine gives
cached_db a cache whose failing calls count as misses (a read, a membership test) or are
skipped (a write, a delete), each logged: the database answers, and the pages are served while
Redis is away. Sessions written meanwhile are in the database, which is the copy that counts.
"""

from __future__ import annotations

import logging

from django.contrib.sessions.backends import cached_db

logger = logging.getLogger("explorer.sessions")


class _Forgiving:
    """A cache whose errors are logged and answered as a miss."""

    def __init__(self, cache):
        self._cache = cache

    def _failed(self, call: str, error: Exception) -> None:
        logger.warning("session cache %s failed, the database answers: %s: %s", call,
                       type(error).__name__, error)

    def get(self, key, default=None):
        try:
            return self._cache.get(key, default)
        except Exception as error:
            self._failed("read", error)
            return default

    def set(self, key, value, timeout=None):
        try:
            self._cache.set(key, value, timeout)
        except Exception as error:
            self._failed("write", error)

    def delete(self, key):
        try:
            self._cache.delete(key)
        except Exception as error:
            self._failed("delete", error)

    def __contains__(self, key) -> bool:
        try:
            return key in self._cache
        except Exception as error:
            self._failed("read", error)
            return False

    async def aget(self, key, default=None):
        try:
            return await self._cache.aget(key, default)
        except Exception as error:
            self._failed("read", error)
            return default

    async def aset(self, key, value, timeout=None):
        try:
            await self._cache.aset(key, value, timeout)
        except Exception as error:
            self._failed("write", error)

    async def adelete(self, key):
        try:
            await self._cache.adelete(key)
        except Exception as error:
            self._failed("delete", error)

    def __str__(self) -> str:
        return str(self._cache)


class SessionStore(cached_db.SessionStore):
    def __init__(self, session_key=None):
        super().__init__(session_key)
        self._cache = _Forgiving(self._cache)
