# Set-up and everyday commands. Needs only Python (>= 3.10) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared

.PHONY: demo test docs fuzz lint bench bench-api bench-svm bench-predict bench-s3vm bench-scaling bench-lapsvm bench-usmo bench-tv bench-tune bench-contention bench-small bench-cluster clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamp files make the install step re-run when pyproject.toml changes.
# (PYTHONWARNINGS: setuptools' editable-install banner is no news to a developer here)
# COMPILE: the package's bytecode written once, as pip does for a wheel; an editable install
# writes none, and where PYTHONDONTWRITEBYTECODE is set every command compiled its ~35 modules
# again (0.05 s of a 0.3 s small run)
COMPILE := $(BIN)/python -m compileall -q formats solvers ssl_cli ssl_svm
$(VENV)/.installed: pyproject.toml $(BIN)/python
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e .
	$(COMPILE)
	touch $@

$(VENV)/.installed-test: pyproject.toml $(BIN)/python
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[test]'
	$(COMPILE)
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	@echo "== two-class: train svm on sample_data/pcmac.train, predict sample_data/pcmac.test"
	$(BIN)/ssl-train -a svm -W 0.001 -q sample_data/pcmac.train out.pcmac.model
	$(BIN)/ssl-predict sample_data/pcmac.test out.pcmac.model out.pcmac.pred
	@echo "== semi-supervised: the same 50 labels plus the file's 450 unlabeled rows (tsvm, da)"
	$(BIN)/ssl-train -a tsvm -W 0.001 -R 0.5 -q sample_data/pcmac.train out.pcmac.model
	$(BIN)/ssl-predict sample_data/pcmac.test out.pcmac.model out.pcmac.pred
	$(BIN)/ssl-train -a da -W 0.001 -R 0.5 -q sample_data/pcmac.train out.pcmac.model
	$(BIN)/ssl-predict sample_data/pcmac.test out.pcmac.model out.pcmac.pred
	@echo "   (the point of the toolkit: the svm sees only the 50 labeled rows, 66 % of the test rows"
	@echo "    right; tsvm and da also learn from the 450 unlabeled rows, 87.5 % and 92 %)"
	@echo "== multi-class (one-vs-rest): rls and svm on sample_data/shuttle.train"
	$(BIN)/ssl-train -a rls -W 0.01 -q sample_data/shuttle.train out.shuttle-rls.model
	$(BIN)/ssl-predict sample_data/shuttle.test out.shuttle-rls.model out.shuttle-rls.pred
	$(BIN)/ssl-train -a svm -W 0.01 -v 5 -q sample_data/shuttle.train
	@rm -f out.pcmac.model out.pcmac.pred out.shuttle-rls.model out.shuttle-rls.pred
	@echo "== the commands are in $(BIN): '. $(BIN)/activate' puts them on your PATH"

# The suite runs on TEST_JOBS processes (pytest-xdist; auto: one per core); TEST_JOBS=0 runs it
# in this process alone.
TEST_JOBS ?= auto
test: $(VENV)/.installed-test
	@echo "== ruff, then pytest on $(TEST_JOBS) processes: about 20 minutes on 2 cores (the first"
	@echo "   minutes compile the solvers; the slowest tests are listed at the end)"
	$(BIN)/ruff check ssl_svm ssl_cli solvers formats tests bench examples docs/conf.py docs/gallery_progress.py
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python -m pytest -q --durations=15 \
		-n $(TEST_JOBS) --dist worksteal tests

$(VENV)/.installed-docs: pyproject.toml $(BIN)/python
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[docs]'
	$(COMPILE)
	touch $(VENV)/.installed $@

# The documentation site in docs/_build/html: the user guide, the API reference from the
# docstrings, the commands' reference and the gallery (examples/, each script run). Warnings
# are errors, so a broken link or docstring fails the build.
docs: $(VENV)/.installed-docs
	rm -rf docs/_build docs/auto_examples docs/generated
	@echo "== the site: sphinx runs the gallery's 8 examples, then writes the pages: about 80 s on"
	@echo "   a cold compile cache, 45 s warm (each example names itself as it runs)"
	$(BIN)/python -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "the site: docs/_build/html/index.html"

# A longer campaign of the contract fuzzer (tests/test_fuzz.py runs the short one in `make test`):
# FUZZ_SCALE times the cases, with its own seed (FUZZ_SEED=N to repeat a campaign).
FUZZ_SCALE ?= 20
FUZZ_SEED  ?= $(shell date +%s)
fuzz: $(VENV)/.installed-test
	@echo "== contract fuzzer: scale $(FUZZ_SCALE), seed $(FUZZ_SEED)"
	SSL_SHARED=$(abspath $(SHARED)) SSL_FUZZ_SCALE=$(FUZZ_SCALE) SSL_FUZZ_SEED=$(FUZZ_SEED) \
		$(BIN)/python -m pytest -q tests/test_fuzz.py

lint: $(VENV)/.installed-test
	$(BIN)/ruff check ssl_svm ssl_cli solvers formats tests bench examples docs/conf.py docs/gallery_progress.py

bench: bench-api bench-svm bench-predict bench-s3vm bench-scaling bench-lapsvm bench-usmo bench-tv bench-tune bench-contention bench-small

bench-api: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_api.py

bench-svm: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_svm.py

bench-predict: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_predict.py

bench-s3vm: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_s3vm.py

bench-scaling: $(VENV)/.installed-test
	$(BIN)/python bench/bench_s3vm_scaling.py

bench-lapsvm: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_lapsvm.py table4
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_lapsvm.py table3

bench-usmo: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_usmo.py table3
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_usmo.py scaling

bench-tv: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tv.py table1
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tv.py table2
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tv.py scaling

bench-tune: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tune.py jobs
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tune.py warm
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_tune.py predict

bench-contention: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_contention.py --reps 5

bench-small: $(VENV)/.installed-test
	SSL_SHARED=$(abspath $(SHARED)) $(BIN)/python bench/bench_small.py --sklearn

# not in `bench`: writes a 963 MB split (CLUSTER_SPLIT) first and takes about 15 minutes
CLUSTER_SPLIT ?= /tmp/ssl-svm-splits/synthetic-1m
bench-cluster: $(VENV)/.installed-test
	test -f $(CLUSTER_SPLIT)/train.svm || $(BIN)/python bench/make_split.py $(CLUSTER_SPLIT) --rows 1000000 --labeled 200
	$(BIN)/python bench/bench_cluster.py $(CLUSTER_SPLIT)/train.svm --workers 2 --threads 1
	$(BIN)/python bench/bench_cluster.py $(CLUSTER_SPLIT)/train.svm --workers 1 --threads 2

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache docs/_build docs/auto_examples docs/generated
