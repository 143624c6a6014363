# Developer and CI entry points. The two user commands are `make run` and `make test`;
# both install what they need first, so a fresh clone on a fresh machine just works.
# `make test PYTEST_ARGS="-k ping -x"` passes options through to pytest.

SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
# Touched after a successful install, so the venv is refreshed only when requirements.txt (or
# requirements-nodeps.txt) is newer than the last install (and a half-finished install is
# retried).
VENV_STAMP := $(VENV)/.requirements-installed

# Debian packages the app and its tests run against. Add a package by adding its name here.
# postgresql: the tests start a server of their own from its binaries (tests/postgresql.py).
# npm: installs the front-end packages of package-lock.json (`node`).
SYSTEM_PACKAGES := redis-server chromium postgresql npm

# CI and the development machines run as root; elsewhere apt-get needs sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# The static files the server links with DEBUG off (explorer/settings.py, STATIC_ROOT): copied
# under content-hashed names with gzip and brotli copies, again only when a static file, the
# settings or the installed packages (the admin's files) changed since the last time.
# STATIC_ROOT moves them.
STATIC_MANIFEST := $(or $(STATIC_ROOT),var/static)/staticfiles.json

# Front-end packages (package.json: plotly.js's basic bundle), installed from the lock file
# with their checksums, again only when the lock file changes; settings.py serves them.
NODE_STAMP := node_modules/.lock-installed

.PHONY: run test clean venv system-deps static node

run: venv system-deps node static
	scripts/run.sh

# The suite runs in one pytest-xdist process per core, up to four (tests/conftest.py says how it
# shares them out); `make test XDIST=` runs it in this process alone.
XDIST ?= --numprocesses=auto --maxprocesses=4 --dist=loadfile

test: venv system-deps node
	$(VENV_PYTHON) -m pytest $(XDIST) $(PYTEST_ARGS)

venv: $(VENV_STAMP)

$(VENV_STAMP): requirements.txt requirements-nodeps.txt
	test -x $(VENV_PYTHON) || $(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install -r requirements.txt
	$(VENV_PYTHON) -m pip install --no-deps -r requirements-nodeps.txt
	touch $@

static: $(STATIC_MANIFEST)

node: $(NODE_STAMP)

$(NODE_STAMP): package-lock.json | system-deps
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# DEBUG=true: the settings need a key, and collectstatic signs nothing; on a fresh clone this
# makes the checkout's random key (var/secret_key), which `make run` then serves with.
$(STATIC_MANIFEST): $(VENV_STAMP) $(NODE_STAMP) explorer/settings.py $(shell find static -type f)
	DEBUG=true $(VENV_PYTHON) manage.py collectstatic --no-input --clear --verbosity 0

# A package counts as present when dpkg has it installed or a command of that name is on PATH
# (a Redis built from source, say), so apt-get runs only when something is really missing.
system-deps:
	@missing=""; \
	for package in $(SYSTEM_PACKAGES); do \
		if command -v "$$package" >/dev/null 2>&1; then continue; fi; \
		if dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q 'ok installed'; then \
			continue; \
		fi; \
		missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages:$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends $$missing; \
	fi

clean:
	rm -rf $(VENV) var node_modules
