// Injected by build.mjs into every module that mentions a free `Buffer` (plotly's WebGL helpers
// assume Node); browsers have none.
export { Buffer } from 'buffer';
