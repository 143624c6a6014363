"""Django settings for Fusion Explorer.

Everything a deployment changes is read from the environment through explorer.env, which fails
loudly on bad values. The defaults suit a developer machine (`make run`).
"""
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from explorer.env import (env_bool, env_int, env_list, env_str, next_redis_database,
                          parse_database_url)

BASE_DIR = Path(__file__).resolve().parent.parent

# Runtime state (database, Redis data, logs) lives in var/, which is git-ignored and removed by
# `make clean`. Created here so that `manage.py migrate` works straight after a clone.
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

# Off unless asked for (DEBUG=true, the development flag): Django's debug pages show settings
# and tracebacks to whoever causes an error.
DEBUG = env_bool("DEBUG", default=False)


# The checkout's own key, made at random once (by `make run`, or by a development server) and
# kept here: every process of the checkout (web, workers, manage.py commands) reads it.
SECRET_KEY_FILE = Path(env_str("SECRET_KEY_FILE", default=str(VAR_DIR / "secret_key")))


def _checkout_key() -> str | None:
    """The key in SECRET_KEY_FILE; made at random first when DEBUG is on. Never a constant
    anyone can read: run ids are an HMAC of the key, and a known key would let anyone compute
    a private run's id. None when there is no file and DEBUG is off (then SECRET_KEY must be
    set)."""
    import secrets

    if not SECRET_KEY_FILE.exists():
        if not DEBUG:
            return None
        SECRET_KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
        SECRET_KEY_FILE.touch(mode=0o600)
        SECRET_KEY_FILE.write_text(secrets.token_urlsafe(50))
    return SECRET_KEY_FILE.read_text().strip() or None


# SECRET_KEY, else the checkout's key file; with neither (and DEBUG off) the settings refuse to
# load: there is no built-in key.
SECRET_KEY = env_str("SECRET_KEY", default=_checkout_key())

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Swagger UI's built files, for the API docs page (explorer/api_docs.py).
    "drf_spectacular_sidecar",
    # Log-in locks (explorer/throttle.py); before the app, whose admin module edits axes' admin.
    "axes",
    "explorer.apps.ExplorerConfig",
]

# Sessions: Django's cached_db engine, read from the shared cache (Redis, CACHES below) and
# kept in the database too, so that a cache emptied or down loses none (explorer/sessions.py:
# with Redis down, the database answers and the pages are served). Users by Django's model
# backend, read in plain SQL (explorer/lookups.py), after axes' check that the log-in is not
# locked (explorer/throttle.py).
SESSION_ENGINE = "explorer.sessions"
SESSION_CACHE_ALIAS = "shared"
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "explorer.lookups.ModelBackend"]

MIDDLEWARE = [
    # First: every line logged while serving a request carries its id (explorer/logs.py).
    "explorer.logs.RequestId",
    "django.middleware.security.SecurityMiddleware",
    # Static files (our CSS and JS; STATIC_ROOT below says how), before
    # everything else so a stylesheet costs no session or database work.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Pages and API answers gzipped for clients that accept it (a big run page's HTML is
    # hundreds of kB; static files come precompressed from WhiteNoise and are left alone).
    # Django masks the CSRF token per response, the defence its docs give against BREACH.
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on every response (explorer/middleware.py).
    "explorer.middleware.ContentSecurityPolicy",
    # API answers in JSON for every status, unhandled errors logged (explorer/middleware.py).
    "explorer.middleware.ApiJsonErrors",
    # A NUL character in the path or the query string refused (PostgreSQL would not take it).
    "explorer.middleware.RefuseNulCharacters",
    # A log-in refused by a lock answers 429 (explorer/throttle.py lockout_response); last, as
    # axes asks.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "explorer.urls"
WSGI_APPLICATION = "explorer.wsgi.application"
ASGI_APPLICATION = "explorer.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The web server and the Celery workers share this database. SQLite by default; DATABASE_PATH
# points it at another file (the task tests point their workers at the test database this way).
# DATABASE_URL=postgres://USER:PASSWORD@HOST:PORT/NAME selects PostgreSQL instead, as it must be
# for workers on other machines (explorer.env.parse_database_url says what it accepts).
if os.environ.get("DATABASE_URL") is not None:
    if os.environ.get("DATABASE_PATH") is not None:
        raise ImproperlyConfigured("DATABASE_URL and DATABASE_PATH are both set; unset one.")
    DATABASES = {"default": {
        **parse_database_url(env_str("DATABASE_URL")),
        # Reuse a connection for a few requests, checking it is alive before each one.
        "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE_S", default=60),
        "CONN_HEALTH_CHECKS": True,
    }}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("DATABASE_PATH", default=str(VAR_DIR / "db.sqlite3")),
            "OPTIONS": {
                # Workers write progress while the web server reads: wait for a lock rather
                # than fail, and take the write lock when a transaction starts so two writers
                # never deadlock upgrading their read locks.
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                # Read the file through a memory map (256 MiB of it): pages come from the
                # OS's cache without copying. Write-ahead logging: readers (every page) never
                # wait for a writer (a worker's progress, an upload's blob) nor block one; with
                # it, a commit syncs the log only at checkpoints, and a power cut loses at
                # most the last transactions, never the file (sqlite.org/wal.html).
                "init_command": ("PRAGMA mmap_size=268435456; PRAGMA journal_mode=WAL; "
                                 "PRAGMA synchronous=NORMAL;"),
            },
            # A server thread keeps its connection for a minute instead of opening the file
            # and reading its schema again for every request.
            "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE_S", default=60),
            "CONN_HEALTH_CHECKS": True,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "explorer-index"
LOGOUT_REDIRECT_URL = "explorer-index"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# plotly.js's basic bundle from the front-end packages `make node` installs (package.json), as
# static/vendor/plotly/plotly-basic.min.js: loaded by plots.js only where a chart is drawn.
PLOTLY_JS_DIR = BASE_DIR / "node_modules" / "plotly.js-basic-dist-min"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", PLOTLY_JS_DIR)]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",  # the admin's
]
# With DEBUG off, pages link static files by content-hashed names (run.3f2a9c1e04b7.js) that
# `manage.py collectstatic` writes here, each with a gzip and a brotli copy; `make run` collects
# them again whenever a static file changes. WhiteNoise serves them with a far-future, immutable
# lifetime (a changed file gets a new name) and in the smallest encoding the browser accepts;
# only the hashed names are kept. With DEBUG on, pages link the plain names and WhiteNoise
# serves them straight from the finders, re-read on every request, so edits show at once.
STATIC_ROOT = BASE_DIR / env_str("STATIC_ROOT", default="var/static")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing folder
# Uploaded graphs' files (explorer/graph_store.py): one per content, named by its SHA-256, in
# GRAPH_STORE_DIR (default var/graphs beside the SQLite database; relative to the project's
# root). The web server writes them and every compile and GPU worker reads them, so with workers
# on other machines it is a folder they all mount (README, "Several machines"), or the "graphs"
# alias names another storage backend in a settings module of the deployment's own. Back it up
# with the database: a run whose file is gone fails with a message asking for the upload again.
GRAPH_STORE_DIR = BASE_DIR / env_str("GRAPH_STORE_DIR", default="var/graphs")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    "graphs": {"BACKEND": "explorer.graph_store.GraphFileStorage",
               "OPTIONS": {"location": GRAPH_STORE_DIR}},
}
# Every uploaded file is streamed to a temporary file in the graph store's folder, hashed on the
# way and refused past the input size limit, instead of Django's default handlers (memory up to
# 2.5 MB, then the system's temporary folder): a web process never holds a whole upload.
FILE_UPLOAD_HANDLERS = ["explorer.graph_store.GraphUploadHandler"]
WHITENOISE_KEEP_ONLY_HASHED_FILES = True

# Each web process keeps the rendered results of the finished runs it served (explorer.views
# _cached: immutable once a run is done, keyed by what they show) in its own memory. At most
# this many entries: a big run's first plan is about 0.5 MB of HTML and its unfused plan a few.
# "pages" holds finished runs' pages as each visitor saw them, for a few seconds (explorer.views
# RUN_PAGE_CACHE_S): a cache of their own, so that many visitors' short-lived pages never push
# the results out of "default" (a full cache drops its least recently used entries). An entry
# is the page around its results (about 15 kB; the results stay in "default").
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "results",
        "OPTIONS": {"MAX_ENTRIES": env_int("RESULTS_CACHE_ENTRIES", default=200, minimum=1)},
    },
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "OPTIONS": {"MAX_ENTRIES": env_int("PAGE_CACHE_ENTRIES", default=1000, minimum=1)},
    },
    # The API's request counts (explorer/api.py RateLimit): one small entry per caller and
    # window, apart from the documents above so that neither pushes the other out.
    "api-rate": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "api-rate",
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    },
}
# The API's rate limit (explorer/api.py): each API key, else each logged-in user, else each
# address, may send API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds (0: no limit); past
# that the answer is 429 with Retry-After. Counted per web process.
API_RATE_LIMIT = env_int("API_RATE_LIMIT", default=1200, minimum=0)
API_RATE_WINDOW_S = env_int("API_RATE_WINDOW_S", default=60, minimum=1)

# Celery reads every CELERY_* setting here (workers/celery.py uses namespace="CELERY").
REDIS_URL = env_str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
# "shared": what every web process and machine must see alike: sessions and the sign-up and
# password-reset limits (explorer/throttle.py). In Redis, by default in the database after
# REDIS_URL's (redis://127.0.0.1:6379/1), apart from the queues.
CACHE_REDIS_URL = (env_str("CACHE_REDIS_URL") if "CACHE_REDIS_URL" in os.environ
                   else next_redis_database(REDIS_URL))
# A Redis that stops answering (a full disk, a dropped network path) fails a request after
# CACHE_REDIS_TIMEOUT_S seconds instead of holding its web process for as long as TCP waits.
CACHE_REDIS_TIMEOUT_S = env_int("CACHE_REDIS_TIMEOUT_S", default=3, minimum=1)
CACHES["shared"] = {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                    "LOCATION": CACHE_REDIS_URL,
                    "OPTIONS": {"socket_connect_timeout": CACHE_REDIS_TIMEOUT_S,
                                "socket_timeout": CACHE_REDIS_TIMEOUT_S}}
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker logs through LOGGING below (JSON lines) instead of replacing the root logger's
# handlers with its own plain-text ones.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Compile tasks run for seconds to minutes; prefetching more than one would leave jobs waiting
# behind a busy process while another worker is idle.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# CPU work (import, fusion, codegen, nvcc, cost models) goes to `compile`; work that needs a GPU
# to `gpu`, which only workers on GPU machines consume. The first matching pattern wins.
CELERY_TASK_ROUTES = {
    "workers.measure_run": {"queue": "gpu"},
    "workers.*": {"queue": "compile"},
}
# A job is acknowledged when it ends, not when it starts, and a job whose worker process died is
# put back on the queue: no job is lost with its worker. If the whole worker dies, Redis hands
# its unacknowledged jobs to another worker once CELERY_VISIBILITY_TIMEOUT_S has passed. Keep
# that above COMPILE_TIME_LIMIT_S, or long jobs are delivered twice (harmless: the second copy
# finds the run claimed and waits for the claim's lease, but wasteful).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_S", default=3600, minimum=1),
    # How often a worker looks for jobs whose visibility timeout passed (seconds).
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL_S", default=10, minimum=1),
    "unacked_restore_throttle": 1,
}

# What every page may load (explorer/middleware.py ContentSecurityPolicy): this site only, no
# inline script or style, no plug-ins, no framing (X-Frame-Options DENY says so to old browsers:
# Django's default), no form posting elsewhere. SVG charts and the fusion view's images are
# inline markup or data: URLs.
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    default="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
            "form-action 'self'; frame-ancestors 'none'")
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# An upload is stored and queued after cheap checks (explorer/runs.py check_upload); only a
# file of at most this many bytes, decompressed, is imported in the web request too, so that a
# small file that does not import is refused at once (about 0.4 s of import at 256 KiB). A
# bigger one is imported by the compile worker, which fails the run with the same message.
UPLOAD_INLINE_IMPORT_BYTES = env_int("UPLOAD_INLINE_IMPORT_BYTES", default=256 * 1024,
                                     minimum=0)
# Storage quotas (explorer/runs.py check_quota): the bytes of uploaded graph files a user's runs
# may hold, each file counted once however many of the user's runs use it, and the same for the
# runs shared with a team (which count for their owner too). An upload past either is refused
# before anything is stored (the form says so; the API answers 413); the API keys page shows
# each user's usage.
STORAGE_QUOTA_BYTES = env_int("STORAGE_QUOTA_BYTES", default=2 * 1024**3, minimum=0)
TEAM_STORAGE_QUOTA_BYTES = env_int("TEAM_STORAGE_QUOTA_BYTES", default=10 * 1024**3, minimum=0)
# A failed run keeps its upload this long after it failed (for its owner to retry it), then
# lets go of it: the run stays, saying so, and the file goes with the last run that used it
# (every worker's sweeper, and `manage.py prune_graphs`).
FAILED_RUN_UPLOADS_KEPT_S = env_int("FAILED_RUN_UPLOADS_KEPT_S", default=7 * 24 * 3600,
                                    minimum=0)

# workers.compile_run: past the soft limit a run fails with a message; the hard limit kills a
# worker process stuck past it. A running job renews its lease of the run as it reports
# progress; a run whose lease ran out belongs to a dead worker and is claimed again when its job
# is redelivered, at most COMPILE_MAX_ATTEMPTS times in all.
COMPILE_SOFT_TIME_LIMIT_S = env_int("COMPILE_SOFT_TIME_LIMIT_S", default=600, minimum=1)
COMPILE_TIME_LIMIT_S = env_int(
    "COMPILE_TIME_LIMIT_S", default=COMPILE_SOFT_TIME_LIMIT_S + 60,
    minimum=COMPILE_SOFT_TIME_LIMIT_S + 1,
)
COMPILE_LEASE_S = env_int("COMPILE_LEASE_S", default=120, minimum=1)
# Every worker sends again, this often, the jobs whose broker messages were lost or whose
# worker died (workers/sweeper.py).
JOB_SWEEP_INTERVAL_S = env_int("JOB_SWEEP_INTERVAL_S", default=30, minimum=1)
# A job stored this long ago and never sent is sent (its send failed: the broker was down),
# and a queued job sent this long ago whose queue is empty is sent again (its message was lost;
# one sent before the broker's Redis last started is sent again at once).
JOB_SEND_GRACE_S = env_int("JOB_SEND_GRACE_S", default=30, minimum=1)
JOB_RESEND_S = env_int("JOB_RESEND_S", default=300, minimum=1)
COMPILE_MAX_ATTEMPTS = env_int("COMPILE_MAX_ATTEMPTS", default=3, minimum=1)
# workers.measure_run, the same rules for a measurement job on the `gpu` queue. Timing every
# kernel of four plans of a big graph takes minutes (each kernel: 3 warm-up and 20 timed runs,
# each after an L2 flush, plus the reference interpreter's values to check it against).
MEASURE_SOFT_TIME_LIMIT_S = env_int("MEASURE_SOFT_TIME_LIMIT_S", default=1800, minimum=1)
MEASURE_TIME_LIMIT_S = env_int(
    "MEASURE_TIME_LIMIT_S", default=MEASURE_SOFT_TIME_LIMIT_S + 60,
    minimum=MEASURE_SOFT_TIME_LIMIT_S + 1,
)
MEASURE_LEASE_S = env_int("MEASURE_LEASE_S", default=300, minimum=1)
MEASURE_MAX_ATTEMPTS = env_int("MEASURE_MAX_ATTEMPTS", default=2, minimum=1)
# A GPU worker announces itself in Redis every GPU_WORKER_HEARTBEAT_S seconds; an announcement
# not renewed for three times that is gone (workers/presence.py writes it, explorer/presence.py
# reads it).
GPU_WORKER_HEARTBEAT_S = env_int("GPU_WORKER_HEARTBEAT_S", default=10, minimum=1)
# A worker on the gpu queue started with GPU_WORKER_EMULATED=true needs no GPU and times nothing:
# it checks every kernel of a measurement on the CPU emulator against the reference interpreter
# and stores that check with every time empty ("not measured"), announced and shown as emulated.
# For rehearsing the whole stack where there is no GPU (benchmarks/gpu_stack.py --emulated, CI);
# never a measurement.
GPU_WORKER_EMULATED = env_bool("GPU_WORKER_EMULATED", default=False)

# The learned cost model (compiler/cost/learned/). Trained models are versioned files
# learned-<device>-v<N>.pt in LEARNED_MODEL_DIR (compiler/cost/learned/registry.py); a compile
# predicts each device's kernels with its newest model trained on measured GPU times, or with
# any newest model, synthetic targets included, when LEARNED_ALLOW_SYNTHETIC is on (a demo:
# the pages then say the times are no GPU prediction). LEARNED_DATA_DIRS (comma-separated)
# hold the dataset files (.jsonl.gz) models are trained on. Relative paths are relative to the
# project's root, whatever directory a server or worker starts in.
LEARNED_MODEL_DIR = BASE_DIR / env_str("LEARNED_MODEL_DIR", default="var/models")
# The models shipped with the code (compiler/cost/learned/models/, trained on the GPU
# campaign's measured times) are read beside LEARNED_MODEL_DIR, never written; a model
# trained here takes the next version and so becomes the active one. "off": none are read.
_shipped = env_str("LEARNED_SHIPPED_MODEL_DIR", default="compiler/cost/learned/models")
LEARNED_SHIPPED_MODEL_DIR = None if _shipped == "off" else BASE_DIR / _shipped
LEARNED_DATA_DIRS = [BASE_DIR / path for path in env_list(
    "LEARNED_DATA_DIRS", default=["compiler/cost/learned/datasets"])]
LEARNED_ALLOW_SYNTHETIC = env_bool("LEARNED_ALLOW_SYNTHETIC", default=False)
# What-if (explorer/plan_edits.py): how many plans under edit each web process keeps open (a
# 48-layer step's session holds its graph and priced plan, some tens of MB), and whether their
# kernels get the device's learned model's times (the process then loads torch once).
WHATIF_SESSIONS = env_int("WHATIF_SESSIONS", default=4, minimum=1)
WHATIF_LEARNED = env_bool("WHATIF_LEARNED", default=True)
# How many shares a tuning's search is spread over (workers/tasks.py tuning_shares): 0, the
# default, is one per worker process consuming the compile queue.
TUNE_SHARES = env_int("TUNE_SHARES", default=0, minimum=0)

# Test hook: a compile job sleeps this long when it enters the codegen stage, so a test can kill
# its worker mid-job deterministically. Always 0 outside tests/workers/.
COMPILE_TEST_CODEGEN_DELAY_S = env_int("COMPILE_TEST_CODEGEN_DELAY_S", default=0)

# Structured logs (JSON lines on stderr) of every 500 and failed job, with the traceback.
from explorer.logs import logging_config  # noqa: E402

LOGGING_CONFIG = "explorer.logs.configure"
LOGGING = logging_config(env_str("LOG_LEVEL", default="INFO").upper())
# On when a proxy in front sets X-Request-ID on every request: log lines then carry its id.
# Off, a client could choose the ids of its own requests' lines, so each gets one of ours.
TRUST_REQUEST_ID_HEADER = env_bool("TRUST_REQUEST_ID_HEADER", default=False)

# The client's address (explorer/throttle.py client_address): REMOTE_ADDR, or behind this many
# proxies, each appending to X-Forwarded-For, the address the outermost one saw.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", default=0, minimum=0)

# Log-in locks (django-axes, explorer/throttle.py): a username tried from one address is locked
# after LOGIN_FAILURES_ALLOWED failures, an address after LOGIN_FAILURES_PER_ADDRESS whatever
# the usernames, until LOGIN_LOCKOUT_S seconds after the last failure that counted.
LOGIN_FAILURES_ALLOWED = env_int("LOGIN_FAILURES_ALLOWED", default=5, minimum=1)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", default=30, minimum=1)
LOGIN_LOCKOUT_S = env_int("LOGIN_LOCKOUT_S", default=900, minimum=1)
AXES_HANDLER = "explorer.throttle.LoginLocks"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = "explorer.throttle.failures_per_address"
AXES_COOLOFF_TIME = "explorer.throttle.lockout_period"
AXES_CLIENT_IP_CALLABLE = "explorer.throttle.client_address"
AXES_USERNAME_CALLABLE = "explorer.throttle.attempted_username"
AXES_LOCKOUT_CALLABLE = "explorer.throttle.lockout_response"
# Tries while locked are refused unchecked and not counted: they do not extend the lock.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Failures only (as warnings, the username and address masked); successful log-ins are not
# recorded, and no banner starts every process's log.
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False

# Sign-up (explorer/accounts.py). SIGNUP_INVITE_ONLY: only with an invite link, a team's or one
# staff made. The sign-up form may be sent SIGNUP_ATTEMPTS_ALLOWED times per address within
# SIGNUP_WINDOW_S seconds, and the password-reset form PASSWORD_RESETS_ALLOWED times within
# PASSWORD_RESET_WINDOW_S (each may send an e-mail), counted in the shared cache.
SIGNUP_INVITE_ONLY = env_bool("SIGNUP_INVITE_ONLY", default=False)
SIGNUP_ATTEMPTS_ALLOWED = env_int("SIGNUP_ATTEMPTS_ALLOWED", default=10, minimum=1)
SIGNUP_WINDOW_S = env_int("SIGNUP_WINDOW_S", default=3600, minimum=1)
PASSWORD_RESETS_ALLOWED = env_int("PASSWORD_RESETS_ALLOWED", default=5, minimum=1)
PASSWORD_RESET_WINDOW_S = env_int("PASSWORD_RESET_WINDOW_S", default=3600, minimum=1)

# E-mail (password-reset links): printed on the web server's console by default. EMAIL_BACKEND
# takes "console", "smtp" (with EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD,
# EMAIL_USE_TLS or EMAIL_USE_SSL) or the dotted path of any Django e-mail backend.
EMAIL_BACKENDS = {"console": "django.core.mail.backends.console.EmailBackend",
                  "smtp": "django.core.mail.backends.smtp.EmailBackend"}
_email_backend = env_str("EMAIL_BACKEND", default="console")
EMAIL_BACKEND = EMAIL_BACKENDS.get(_email_backend, _email_backend)
if "." not in EMAIL_BACKEND:
    raise ImproperlyConfigured(
        f"EMAIL_BACKEND={EMAIL_BACKEND!r}: use console, smtp or a backend's dotted path.")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", default="Fusion Explorer <noreply@localhost>")
EMAIL_HOST = env_str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env_int("EMAIL_PORT", default=25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are both on; use one.")

# A deployment served over HTTPS (HTTPS=true; behind a proxy that terminates TLS and sets
# X-Forwarded-Proto): plain HTTP is redirected, cookies are sent over HTTPS only, and browsers
# are told to use HTTPS for a year (HSTS). `manage.py check --deploy` is clean with it and a
# SECRET_KEY of 50 characters or more. Off by default: `make run` serves plain HTTP on loopback.
HTTPS = env_bool("HTTPS", default=False)
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("HSTS_SECONDS", default=365 * 24 * 3600, minimum=0)
    # Subdomains and the browsers' preload list too, as `check --deploy` asks; a site whose
    # subdomains are not all HTTPS sets these false (and the check then says so).
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env_bool("HSTS_PRELOAD", default=True)
