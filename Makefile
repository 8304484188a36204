VENV := .venv
PORT ?= 8501
PY := $(VENV)/bin/python
LOCK := requirements.lock
# where pip finds the CPU build of torch that the lock pins (bertscore extra, tests); on a
# machine whose pip already knows a folder holding it (find-links), pip falls back to that
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PIP := $(PY) -m pip install -q -c $(LOCK)
OIDC := tests/oidc/node_modules/.package-lock.json

.PHONY: install install-bertscore install-test run check test bench lint lock screenshots clean

install: $(VENV)/.app  # the app: runtime dependencies only (DICOM and harness importers included)
install-bertscore: $(VENV)/.bertscore  # + BERTScore (torch, CPU build: about 1 GB)
install-test: $(VENV)/.test $(OIDC)  # + the test tools, BERTScore and the single sign-on test provider

$(VENV)/.app: pyproject.toml $(LOCK)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) -e '.[dicom,harness]'
	touch $@

$(VENV)/.torch: $(VENV)/.app $(LOCK)  # alone from TORCH_INDEX (its requirements come after)
	$(PY) -m pip install -q --no-deps --extra-index-url $(TORCH_INDEX) "$$(grep '^torch==' $(LOCK))"
	touch $@

$(VENV)/.bertscore: $(VENV)/.torch
	$(PIP) -e '.[dicom,harness,bertscore]'
	touch $@

$(VENV)/.test: $(VENV)/.torch
	$(PIP) -e '.[test]'
	touch $@

$(OIDC): tests/oidc/package-lock.json  # the OpenID Connect provider of the single sign-on tests
	if command -v npm >/dev/null; then npm ci --prefix tests/oidc --no-audit --no-fund; \
	else echo "npm not found: the single sign-on tests (marker oidc) will skip"; fi

run: install
	$(VENV)/bin/nmb db upgrade
	$(VENV)/bin/nmb demo --if-empty
	$(VENV)/bin/streamlit run serve.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

check: install-test  # the fast lane: no process, server, browser or demo build (prints its time)
	$(PY) -m tests.lanes fast

test: install-test  # everything, lane by lane: their times and the 30 slowest tests
	$(PY) -m tests.lanes fast slow

bench: install-test
	$(PY) -m benchmarks

screenshots: install-test  # docs/img/{score,exam,calibrate}.png from the running demo (needs /usr/bin/chromium)
	$(PY) -m tests.browser.screenshots

lint: install-test
	$(VENV)/bin/ruff check .

lock:  # requirements.lock after a change to pyproject.toml; make lock UPGRADE=--upgrade: newest of all
	test -x .venv-lock/bin/pip-compile || (python3 -m venv .venv-lock && .venv-lock/bin/pip install -q pip-tools)
	.venv-lock/bin/pip-compile -q $(UPGRADE) --strip-extras --all-extras --no-emit-index-url \
	  --no-emit-find-links --unsafe-package neural-medbench-studio -c requirements/torch-cpu.txt \
	  -o $(LOCK) pyproject.toml

clean:
	rm -rf $(VENV) .venv-lock .nmb
