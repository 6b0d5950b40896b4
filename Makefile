# The two commands of the README. Everything they need is installed by .ci/setup.
.PHONY: tour test setup

# make tour            -> JupyterLab on notebooks/01_tour.ipynb
# make tour HTML=x.html -> the tour's graph as a standalone, offline HTML file (no browser needed)
tour:
	bash .ci/tour $(if $(HTML),--html $(HTML))

test:  ## lint + the full test suite
	bash .ci/test

setup:
	bash .ci/setup
