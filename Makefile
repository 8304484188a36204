VENV := .venv
PORT ?= 8501
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OIDC := tests/oidc/node_modules/.package-lock.json
# CPU torch for the bertscore extra: found in pip's find-links here (/opt/wheels); elsewhere add
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu so pip does not take a CUDA build
TORCH ?= 2.13.0

.PHONY: install run test bench lint screenshots clean

install: $(STAMP) $(OIDC)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q 'torch==$(TORCH)'  # the CPU build, before the bertscore extra wants one
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

$(OIDC): tests/oidc/package-lock.json  # the OpenID Connect provider of the single sign-on tests
	if command -v npm >/dev/null; then npm ci --prefix tests/oidc --no-audit --no-fund; \
	else echo "npm not found: the single sign-on tests (marker oidc) will skip"; fi

run: install
	$(VENV)/bin/nmb db upgrade
	$(VENV)/bin/nmb demo --if-empty
	$(VENV)/bin/streamlit run serve.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

test: install
	$(VENV)/bin/python -m pytest -q

bench: install
	$(VENV)/bin/python -m benchmarks

screenshots: install  # docs/img/{score,exam,calibrate}.png from the running demo (needs /usr/bin/chromium)
	$(VENV)/bin/python -m tests.browser.screenshots

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .nmb
