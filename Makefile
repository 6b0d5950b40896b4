# The two commands of the README (tour, test), and the others of CONTRIBUTING.md. Everything
# they need is installed by .ci/setup; only `make test` needs chromium (its browser tests).
.PHONY: tour test setup compat docs dist notebooks screenshots

# make tour            -> JupyterLab on notebooks/01_tour.ipynb
# make tour HTML=build/tour.html -> the tour's graph as a standalone, offline HTML file (no browser
#                         needed; its folder is made if missing)
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
#                         `pip install dist/autograd_widget-0.1.0-py3-none-any.whl` and needs no
#                         Node.js. Needs Node.js and pip's indexes, not the developer set-up: `build`
#                         runs from a throwaway venv, the backend in its isolated environment
dist:
	bash .ci/dist

# make notebooks       -> execute every notebook and write its outputs back (they are committed
#                         with outputs; tests/project/test_notebooks.py fails while one is stale)
notebooks:
	bash .ci/setup --without-browser
	.venv/bin/python tests/helpers/notebook_outputs.py $(NAMES)

# make screenshots     -> the README's screenshot (notebooks/img/widget.png), taken again by its
#                         browser test (`make test` takes it too, but keeps it under tests/artifacts/)
screenshots:
	bash .ci/setup
	AW_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest -q -p no:cacheprovider \
		"tests/browser/test_widget_browser.py::test_readme_screenshot_light_and_dark"
	@git status --short notebooks/img

# make compat TORCH=2.4.0 -> the non-browser suite on that torch, in a throwaway venv
#   (.venv-compat/<version>, removed afterwards unless KEEP=1; never touches .venv)
compat:
	@test -n "$(TORCH)" || { echo "usage: make compat TORCH=x.y.z [KEEP=1]" >&2; exit 2; }
	TORCH=$(TORCH) bash .ci/compat $(ARGS)
