// What both pages of perspectrum serve use: finding elements and making them, text always set
// as text (never as HTML), and shares as percent. Loaded before each page's own script.
"use strict";

const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function percent(value) {
  return `${Math.round(value * 100)}%`;
}
