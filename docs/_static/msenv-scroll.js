/* A table or a figure wider than its column (on a phone) scrolls sideways inside its own box: mark
   each such box, so that the stylesheet says so under it ("scroll sideways for the rest") instead of
   hiding its last columns or its legend without a word. Run on load and on every resize. */
(function () {
  const BOXES = "article table.docutils, article .table-wrapper, article span.msenv-figure";
  function mark() {
    for (const el of document.querySelectorAll(BOXES)) {
      const ox = getComputedStyle(el).overflowX;
      const scrolls = (ox === "auto" || ox === "scroll") && el.scrollWidth > el.clientWidth + 1;
      el.classList.toggle("msenv-scrolls", scrolls);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  window.addEventListener("load", mark);
  window.addEventListener("resize", mark);
})();
