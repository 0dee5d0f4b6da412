# glshare: `make run` and `make test` set up what they need (Debian packages, .venv) and are
# quick when nothing changed.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.glshare-installed
ARGS ?=
PYTEST_ARGS ?=
XVFB := xvfb-run -a -s "-screen 0 1280x1024x24"

.PHONY: run test setup system bytecode bench info lint clean

run: setup
	$(VENV)/bin/glshare run $(ARGS)

# The tests run on every CPU OpenCL implementation present: PoCL and Intel's CPU runtime, which
# .ci/install-venv.sh installs and registers (OCL_ICD_VENDORS, its vendors folder with PoCL's ICD);
# GLSHARE_REQUIRE_CL_IMPLS makes a missing second implementation fail instead of skip.
ICD_VENDORS := $(abspath $(VENV))/etc/glshare/OpenCL/vendors
test: setup
	@if [ -z "$$OCL_ICD_VENDORS" ] && [ -d "$(ICD_VENDORS)" ]; then export OCL_ICD_VENDORS="$(ICD_VENDORS)"; fi; \
	 if [ "$${GLSHARE_SECOND_CL:-1}" != 0 ]; then export GLSHARE_REQUIRE_CL_IMPLS=$${GLSHARE_REQUIRE_CL_IMPLS:-2}; fi; \
	 if [ -n "$$DISPLAY" ]; then $(PY) -m pytest $(PYTEST_ARGS); \
	 else echo "make test: no display, running under Xvfb"; $(XVFB) $(PY) -m pytest $(PYTEST_ARGS); fi

bench: setup
	$(VENV)/bin/glshare bench $(ARGS)

info: setup
	$(VENV)/bin/glshare info $(ARGS)

lint: setup
	$(VENV)/bin/ruff check app tests

# app/native: the CL profiling stamps read in C, a batch per call (without a C compiler glshare reads
# them through ctypes and says so in `glshare info`)
NATIVE := app/native/_stamps.so
# glshare attach's libraries (app/native/attach/<stem>.c -> lib<stem>.so), loaded into the attached program
ATTACH_SRC := $(wildcard app/native/attach/*.c)
ATTACH_LIBS := $(foreach c,$(ATTACH_SRC),$(dir $(c))lib$(notdir $(c:.c=.so)))
setup: system $(STAMP) $(NATIVE) $(ATTACH_LIBS) bytecode

# glshare's own bytecode, compiled here (only what changed): where PYTHONDONTWRITEBYTECODE is set (as
# in the 2-core machine's shell), Python never writes it, and every start compiled each module of app/ from
# source: 510 ms against 404 to the first frame headless (medians of six interleaved pairs,
# bench/results/README.md, sixteenth session). A module edited since is compiled again in memory.
bytecode: $(STAMP)
	@$(PY) -m compileall -q app

$(NATIVE) $(ATTACH_LIBS): app/native/stamps.c $(ATTACH_SRC) $(wildcard app/native/attach/*.h) app/native/__init__.py $(STAMP)
	@$(PY) -m app.native build

system:
	@bash .ci/system-packages.sh

$(STAMP): pyproject.toml .ci/install-venv.sh
	@bash .ci/install-venv.sh $(VENV)
	@touch $(STAMP)

clean:
	rm -rf $(VENV) out .pytest_cache $(NATIVE) $(ATTACH_LIBS)
