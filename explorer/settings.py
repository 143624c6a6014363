"""Django settings for Fusion Explorer.

Everything a deployment changes is read from the environment through explorer.env, which fails
loudly on bad values. The defaults suit a developer machine (`make run`).
"""
from pathlib import Path

from explorer.env import env_bool, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# Runtime state (database, Redis data, logs) lives in var/, which is git-ignored and removed by
# `make clean`. Created here so that `manage.py migrate` works straight after a clone.
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

DEBUG = env_bool("DEBUG", default=True)

# Only a debug server may fall back to a known key; a real deployment must set its own.
SECRET_KEY = env_str(
    "SECRET_KEY",
    default="django-insecure-development-only-key" if DEBUG else None,
)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "explorer.apps.ExplorerConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "db.sqlite3",
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

# Celery reads every CELERY_* setting here (workers/celery.py uses namespace="CELERY").
REDIS_URL = env_str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Compile tasks run for seconds to minutes; prefetching more than one would leave jobs waiting
# behind a busy process while another worker is idle.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# CPU work (import, fusion, codegen, nvcc, cost models) goes to `compile`. Tasks that need a GPU
# will get their own entry for the `gpu` queue above this one: the first matching pattern wins.
CELERY_TASK_ROUTES = {
    "workers.*": {"queue": "compile"},
}
