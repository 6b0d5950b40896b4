"""Set-up for the project tests: the notebook tests reuse this session's docs build."""

from __future__ import annotations

import pytest

from tests.helpers import notebook_outputs


@pytest.fixture(autouse=True, scope="session")
def _notebooks_from_the_docs_build(request):
    """Share this session's docs notebook cache (tests/conftest.py `docs_cache`) with
    tests/helpers/notebook_outputs.py `executed`: a notebook the docs build executed in this
    session (`docs_site`) is not executed again; one it did not (docs tests deselected, or not
    yet run) is executed as before. Looked up by name, not a parameter, so that the project's
    tests do not all count as users of the docs cache (tests/conftest.py groups those)."""
    notebook_outputs.share_docs_cache(request.getfixturevalue("docs_cache"))
    yield
    notebook_outputs.share_docs_cache(None)
