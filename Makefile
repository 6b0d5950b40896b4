# The two commands of the README (tour, test), and the others of CONTRIBUTING.md. Everything
# they need is installed by .ci/setup; only `make test` needs chromium (its browser tests).
.PHONY: tour test setup compat docs dist notebooks

# make tour            -> JupyterLab on notebooks/01_tour.ipynb
# make tour HTML=x.html -> the tour's graph as a standalone, offline HTML file (no browser needed)
tour:
	bash .ci/tour $(if $(HTML),--html $(HTML))

test:  ## lint + the full test suite
	bash .ci/test

setup:
	bash .ci/setup

# make docs            -> the documentation site (mkdocs.yml, docs/) on http://127.0.0.1:8000
#                         (PORT=8001 for another port); the first build executes the notebooks
#                         (~50 s on 2 cores), later ones reuse them (build/docs-notebooks)
docs:
	bash .ci/setup --without-browser
	NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs serve -a 127.0.0.1:$(or $(PORT),8000)

# make dist            -> dist/autograd_widget-VERSION-py3-none-any.whl and .tar.gz, both carrying
#                         the built front-end (autograd_widget/static/): the wheel installs with
#                         `pip install dist/autograd_widget-*.whl` and needs no Node.js
dist:
	bash .ci/setup --without-browser
	rm -rf dist
	.venv/bin/python -m build --outdir dist .
	@ls -1 dist

# make notebooks       -> execute every notebook and write its outputs back (they are committed
#                         with outputs; tests/project/test_notebooks.py fails while one is stale)
notebooks:
	bash .ci/setup --without-browser
	.venv/bin/python tests/helpers/notebook_outputs.py $(NAMES)

# make compat TORCH=2.4.0 -> the non-browser suite on that torch, in a throwaway venv
#   (.venv-compat/<version>, removed afterwards unless KEEP=1; never touches .venv)
compat:
	@test -n "$(TORCH)" || { echo "usage: make compat TORCH=x.y.z [KEEP=1]" >&2; exit 2; }
	TORCH=$(TORCH) bash .ci/compat $(ARGS)
