# The two commands of the README. Everything they need is installed by .ci/setup.
.PHONY: tour test setup

tour:  ## open notebooks/01_tour.ipynb in JupyterLab
	bash .ci/tour

test:  ## lint + the full test suite
	bash .ci/test

setup:
	bash .ci/setup
