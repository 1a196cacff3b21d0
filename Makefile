# Two entry points that work on a fresh machine with Python 3.11 and pip:
#   make train   installs into .venv and trains A2C on CartPole-v1
#   make test    installs into .venv (with the test, dist, export, atari,
#                onnx, docs, wandb and mlflow extras: pytest, ruff, mypy,
#                Ray, LiteRT, ale-py, tf2onnx, onnxruntime, mkdocs, wandb,
#                mlflow-skinny) and runs
#                the suite, whose tests/test_lint.py runs ruff and mypy; then
#                a quick part of it on Python 3.13 when an interpreter is found
# For contributors (both install the test extras into .venv first):
#   make lint          ruff check and mypy alone (what tests/test_lint.py runs)
#   make format-check  ruff format --check alone (tests/test_lint.py runs it
#                      too, outside the only-shrinking list of older files)
#   make docs          the documentation site with its API reference, into
#                      site/ (strict: tests/test_docs_site.py builds it too)
PYTHON ?= python3.11
VENV ?= .venv
ROOT_DIR ?= runs/ac_cart_pole

# A quick part of the suite (imports, unit tests, one short training) also
# runs on Python 3.13 when an interpreter is found; skipped, with a line
# saying so, where there is none.
PY313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13 2>/dev/null))
VENV313 ?= .venv313
# setuptools' editable install prints an information banner ("Editable
# installation ... be careful with folders in your working directory with the
# same name as your package"), which says nothing about this project; it is
# filtered by its exact text, so deprecation warnings would still show.
QUIET_BUILD = PYTHONWARNINGS='ignore:Editable installation.:UserWarning'
QUICK_TESTS ?= tests/test_structure.py tests/ops tests/metrics tests/utils tests/replay tests/networks 'tests/test_examples.py::test_example_trains_briefly[ac_cart_pole.gin]'

.PHONY: install install-test train test test-py313 lint format-check docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

install: $(VENV)/bin/python
	$(QUIET_BUILD) $(VENV)/bin/pip install -q -e .

install-test: $(VENV)/bin/python
	$(QUIET_BUILD) $(VENV)/bin/pip install -q -e '.[test,dist,export,atari,onnx,docs,wandb,mlflow,offline]'
	$(VENV)/bin/pip install -q --no-deps minatar==1.0.15

train: install
	$(VENV)/bin/alf-train --gin_file examples/ac_cart_pole.gin --root_dir $(ROOT_DIR)

test: install-test
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup -q --durations=15 tests
	$(MAKE) test-py313

test-py313:
	@if [ -z "$(PY313)" ]; then \
		echo "make test: no Python 3.13 interpreter (looked for ~/.pyenv/versions/3.13*/bin/python3.13 and python3.13 on PATH): 3.13 quick suite skipped"; \
	else \
		echo "make test: quick suite on $$($(PY313) --version) ($(PY313))" && \
		$(PY313) -m venv $(VENV313) && \
		$(VENV313)/bin/pip install -q --upgrade pip && \
		$(QUIET_BUILD) $(VENV313)/bin/pip install -q -e '.[test]' && \
		$(VENV313)/bin/python -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider $(QUICK_TESTS); \
	fi

docs: install-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d site

lint: install-test
	$(VENV)/bin/ruff check alf_rl tests benchmarks examples
	$(VENV)/bin/mypy

format-check: install-test
	$(VENV)/bin/ruff format --check alf_rl tests

clean:
	rm -rf $(VENV) $(VENV313) runs *.egg-info .mypy_cache .ruff_cache
