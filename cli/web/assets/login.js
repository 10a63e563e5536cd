// mongomq web: the login page's one behaviour: say when the last token was wrong.
"use strict";
if (new URLSearchParams(location.search).has("failed")) document.getElementById("failed").hidden = false;
