// jsdom has no 2D canvas: every canvas gets a context that records what is drawn (fixtures.js).
import { installFakeCanvas } from './fixtures.js';

installFakeCanvas();
