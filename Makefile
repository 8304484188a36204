VENV := .venv
PORT ?= 8501
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test bench lint screenshots clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

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
