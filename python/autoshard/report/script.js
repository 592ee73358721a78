// Hover in autoshard's HTML reports: pointing at a unit of a timeline
// highlights the units of the same microbatch (data-mb) in that figure and
// dims the others. Embedded by the C++ writers like style.css.
(function () {
  function figureOf(el) { return el.closest('svg'); }
  document.querySelectorAll('svg .unit[data-mb]').forEach(function (u) {
    u.addEventListener('mouseenter', function () {
      var svg = figureOf(u), mb = u.getAttribute('data-mb');
      svg.querySelectorAll('.unit[data-mb]').forEach(function (v) {
        v.classList.toggle(v.getAttribute('data-mb') === mb ? 'hl' : 'dim', true);
      });
    });
    u.addEventListener('mouseleave', function () {
      figureOf(u).querySelectorAll('.unit').forEach(function (v) {
        v.classList.remove('hl', 'dim');
      });
    });
  });
  // What the browser laid out: the timelines' drawn units (non-zero boxes),
  // read by the browser test (python/tests/test_report_browser.py).
  var drawn = 0;
  document.querySelectorAll('svg.timeline .unit').forEach(function (u) {
    var box = u.getBBox();
    if (box.width > 0 && box.height > 0) drawn++;
  });
  document.body.setAttribute('data-drawn-units', String(drawn));
})();
