"""What each backward node type computes: one expression tree per gradient, LaTeX and torch.

`api` is the entry point (`formula`, `evaluate`, `covered_types`, `node_formula`); `formula`
holds the `Formula` record; `expr` and `ops` build the trees; the tables are split by op family
(`elementwise`, `activations`, `shapes`, `reductions`, `nn`, `sequence`, `recurrent`); `doc`
writes the reference page of every formula.

Example:
    >>> from autograd_widget.core.formulas.api import formula
    >>> formula("NegBackward0")
    '\\\\begin{aligned} \\\\mathrm{grad}_{\\\\mathrm{self}} &= -G \\\\end{aligned}'
"""

__all__: list[str] = []
