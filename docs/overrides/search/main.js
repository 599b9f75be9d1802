// The search box of the built site, working from file:// as well as from a web server.
//
// mkdocs' own search/main.js runs lunr in a web worker that fetches search_index.json; a page
// opened from file:// has the origin "null", from which a browser starts no worker and
// fetches no file. This replacement loads lunr.js and the index as <script> elements
// (search/search_index.js, written by docs/overrides/offline_search.py after each build)
// and searches in the page itself. The markup it fills is the theme's search modal
// (#mkdocs-search-query, #mkdocs-search-results).
(function () {
  "use strict";

  var index = null;      // the lunr index, once built
  var documents = {};    // location -> {location, title, text}
  var minLength = 3;     // the search plugin's min_search_length (its config overrides it)

  function joinUrl(base, path) {
    if (path.charAt(0) === "/") {
      return path;
    }
    return base.charAt(base.length - 1) === "/" ? base + path : base + "/" + path;
  }

  function escapeHtml(value) {
    return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;")
      .replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function loadScript(path, onLoad) {
    var script = document.createElement("script");
    script.src = joinUrl(base_url, path);
    script.onload = onLoad;
    script.onerror = function () {
      console.error("search: could not load " + script.src);
    };
    document.head.appendChild(script);
  }

  function buildIndex() {
    var data = window.mkdocs_search_index;
    if (!data || !window.lunr) {
      console.error("search: the index or lunr.js did not load");
      return;
    }
    if (data.config && data.config.separator && data.config.separator.length) {
      lunr.tokenizer.separator = new RegExp(data.config.separator);
    }
    if (data.config && data.config.min_search_length) {
      minLength = data.config.min_search_length;
    }
    index = lunr(function () {
      this.field("title");
      this.field("text");
      this.ref("location");
      for (var i = 0; i < data.docs.length; i++) {
        this.add(data.docs[i]);
        documents[data.docs[i].location] = data.docs[i];
      }
    });
    var input = document.getElementById("mkdocs-search-query");
    if (input) {
      input.addEventListener("keyup", doSearch);
      input.addEventListener("input", doSearch);
      var term = termFromLocation();
      if (term) {
        input.value = term;
      }
      if (input.value) {
        doSearch();
      }
    }
  }

  function termFromLocation() {
    var pairs = window.location.search.substring(1).split("&");
    for (var i = 0; i < pairs.length; i++) {
      var pair = pairs[i].split("=");
      if (pair[0] === "q" && pair.length > 1) {
        return decodeURIComponent(pair[1].replace(/\+/g, "%20"));
      }
    }
    return "";
  }

  function search(query) {
    var found;
    try {
      found = index.search(query);
    } catch (error) {  // lunr's query syntax (a trailing ':' or '~'): search the words alone
      found = index.search(query.replace(/[:~^*+-]/g, " "));
    }
    return found.map(function (hit) { return documents[hit.ref]; });
  }

  function doSearch() {
    var query = document.getElementById("mkdocs-search-query").value;
    var results = document.getElementById("mkdocs-search-results");
    while (results.firstChild) {
      results.removeChild(results.firstChild);
    }
    if (index === null || query.length < minLength) {
      return;
    }
    var docs = search(query);
    if (docs.length === 0) {
      var none = results.getAttribute("data-no-results-text") || "No results found";
      results.insertAdjacentHTML("beforeend", "<p>" + escapeHtml(none) + "</p>");
      return;
    }
    for (var i = 0; i < docs.length; i++) {
      var doc = docs[i];
      results.insertAdjacentHTML("beforeend",
        '<article><h3><a href="' + escapeHtml(joinUrl(base_url, doc.location)) + '">' +
        escapeHtml(doc.title) + "</a></h3><p>" + escapeHtml(doc.text.substring(0, 200)) +
        "</p></article>");
    }
  }

  loadScript("search/lunr.js", function () {
    loadScript("search/search_index.js", buildIndex);
  });
})();
