// The link widget's live search: filters the provider list as the user types. The page works
// without it (the search form is a GET the server answers filtered); this only saves the
// round trip (the server sends every row, those a search left out `hidden`). Matching is the server's: every word of the query in the provider's name or
// aliases, case and accents ignored (each row's data-search is the server's folded text).
(function () {
  'use strict';
  var input = document.getElementById('q');
  var status = document.getElementById('search-status');
  var nav = document.getElementById('providers');
  if (!input || !status || !nav) return;
  var rows = nav.querySelectorAll('li[data-search]');
  var groups = nav.querySelectorAll('section.group');
  var timer = null;

  function fold(text) {
    return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
  }

  function filter() {
    var words = fold(input.value).split(' ').filter(Boolean);
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].getAttribute('data-search');
      var hit = words.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].hidden = !hit;
      if (hit) shown++;
    }
    for (var j = 0; j < groups.length; j++) {
      groups[j].hidden = !groups[j].querySelector('li[data-search]:not([hidden])');
    }
    if (!words.length) {
      status.textContent = '';
    } else if (shown === 0) {
      status.textContent = status.getAttribute('data-none').replace('{query}', input.value.trim());
    } else {
      status.textContent = status.getAttribute('data-count').replace('{count}', shown.toLocaleString(document.documentElement.lang));
    }
  }

  input.addEventListener('input', function () {
    // The status is announced once the user pauses, not at every key.
    clearTimeout(timer);
    timer = setTimeout(filter, 120);
  });
})();
