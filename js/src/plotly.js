// Partial plotly.js bundle: only the trace types the widget draws. The full bundle is ~4.9 MB and
// every byte of the widget's ESM is stored in each saved notebook, so register traces here, not more.
import Plotly from 'plotly.js/lib/core';
import scatter from 'plotly.js/lib/scatter';
import scattergl from 'plotly.js/lib/scattergl';

Plotly.register([scatter, scattergl]);

export default Plotly;
