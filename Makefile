# Two entry points that work on a fresh machine with Python 3.11 and pip:
#   make train   installs into .venv and trains A2C on CartPole-v1
#   make test    installs into .venv (with the test and dist extras: pytest,
#                Ray) and runs the suite
PYTHON ?= python3.11
VENV ?= .venv
ROOT_DIR ?= runs/ac_cart_pole

.PHONY: install install-test train test clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

install: $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e .

install-test: $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e '.[test,dist]'

train: install
	$(VENV)/bin/alf-train --gin_file examples/ac_cart_pole.gin --root_dir $(ROOT_DIR)

test: install-test
	$(VENV)/bin/python -m pytest -n 2 -q tests

clean:
	rm -rf $(VENV) runs *.egg-info
