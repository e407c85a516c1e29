package ui

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// Every embedded file is served with its type and the security headers;
// /ui/ and /ui are the index page.
func TestServesEveryFile(t *testing.T) {
	h := Handler()
	assets := Assets()
	if len(assets) < 10 {
		t.Fatalf("only %d embedded files: %v", len(assets), assets)
	}
	for name, size := range assets {
		w := get(t, h, http.MethodGet, Prefix+name)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s = %d", name, w.Code)
			continue
		}
		if want := contentTypes[path.Ext(name)]; w.Header().Get("Content-Type") != want {
			t.Errorf("%s: Content-Type %q, want %q", name, w.Header().Get("Content-Type"), want)
		}
		if w.Body.Len() != size {
			t.Errorf("%s: %d bytes served, %d embedded", name, w.Body.Len(), size)
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers missing: %v", name, w.Header())
		}
	}
	_ = fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if _, ok := assets[p]; err == nil && !d.IsDir() && !ok {
			t.Errorf("%s is embedded but never served: add its type to contentTypes", p)
		}
		return nil
	})
	for _, p := range []string{"/ui", "/ui/"} {
		w := get(t, h, http.MethodGet, p)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<script type="module" src="/ui/v/`+Build()+`/js/app.js">`) {
			t.Errorf("GET %s = %d %.80q", p, w.Code, w.Body.String())
		}
	}
	if w := get(t, h, http.MethodHead, "/ui/style.css"); w.Code != http.StatusOK {
		t.Errorf("HEAD style.css = %d", w.Code)
	}
}

// A client that accepts gzip gets the compressed file, which unpacks to
// the file; others get it plain.
func TestGzip(t *testing.T) {
	h := Handler()
	for _, ae := range []string{"gzip", "br, gzip;q=0.8", "deflate, GZIP"} {
		req := httptest.NewRequest(http.MethodGet, "/ui/js/jobs.js", nil)
		req.Header.Set("Accept-Encoding", ae)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("Accept-Encoding %q: headers %v", ae, w.Header())
		}
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		want, _ := fs.ReadFile(static, "js/jobs.js")
		if !bytes.Equal(got, want) {
			t.Fatalf("Accept-Encoding %q: unpacked %d bytes, want the %d of the file", ae, len(got), len(want))
		}
		if GzipSizes()["js/jobs.js"] >= len(want) {
			t.Errorf("gzip saves nothing on jobs.js")
		}
	}
	for _, ae := range []string{"", "br", "gzip;q=0"} {
		req := httptest.NewRequest(http.MethodGet, "/ui/js/jobs.js", nil)
		req.Header.Set("Accept-Encoding", ae)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Header().Get("Content-Encoding") != "" || w.Body.Len() != Assets()["js/jobs.js"] {
			t.Errorf("Accept-Encoding %q: encoding %q, %d bytes", ae, w.Header().Get("Content-Encoding"), w.Body.Len())
		}
	}
}

// A conditional GET of an unchanged file is a 304.
func TestRevalidates(t *testing.T) {
	h := Handler()
	w := get(t, h, http.MethodGet, "/ui/style.css")
	req := httptest.NewRequest(http.MethodGet, "/ui/style.css", nil)
	req.Header.Set("If-Modified-Since", w.Header().Get("Last-Modified"))
	w2 := httptest.NewRecorder()
	h.ServeHTTP(w2, req)
	if w2.Code != http.StatusNotModified {
		t.Errorf("conditional GET = %d, want 304", w2.Code)
	}
}

// Paths that name no file, escape the tree or use another method fail
// plainly, saying what was asked.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/ui/nosuch.js", "/ui/js/", "/ui/js", "/ui/../ui.go", "/ui/js/../../ui.go", "/ui//style.css", "/uifoo"} {
		w := get(t, h, http.MethodGet, p)
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "no such page") {
			t.Errorf("GET %s = %d %q, want 404", p, w.Code, w.Body.String())
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		w := get(t, h, m, "/ui/")
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /ui/ = %d Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

// Wrap serves the UI, redirects / and passes everything else to the API
// untouched (escaped paths included).
func TestWrap(t *testing.T) {
	var seen []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.EscapedPath())
		w.WriteHeader(http.StatusTeapot)
	})
	h := Wrap(api)
	if w := get(t, h, http.MethodGet, "/"); w.Code != http.StatusTemporaryRedirect || w.Header().Get("Location") != Prefix {
		t.Errorf("GET / = %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := get(t, h, http.MethodGet, "/ui/js/app.js"); w.Code != http.StatusOK {
		t.Errorf("GET /ui/js/app.js = %d", w.Code)
	}
	for _, target := range []string{"/v1/jobs", "/v1/job/a%2Fb", "/api/v2/ping", "/v1/node//allocations"} {
		if w := get(t, h, http.MethodGet, target); w.Code != http.StatusTeapot {
			t.Errorf("GET %s = %d, want the API's answer", target, w.Code)
		}
	}
	if w := get(t, h, http.MethodPost, "/"); w.Code != http.StatusTeapot {
		t.Errorf("POST / = %d, want the API's answer", w.Code)
	}
	want := "GET /v1/jobs,GET /v1/job/a%2Fb,GET /api/v2/ping,GET /v1/node//allocations,POST /"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("the API saw %s, want %s", got, want)
	}
}

// importRE finds the relative module imports of a JavaScript file.
var importRE = regexp.MustCompile(`(?m)(?:^\s*import\s[^;]*?from\s+|import\()'(\./[^']+)'`)

// Every module a page imports is embedded, every view module is reached
// from app.js, and no file refers to another host: the UI works with no
// network but the agent's.
func TestModulesAreSelfContained(t *testing.T) {
	reached := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if reached[name] {
			return
		}
		reached[name] = true
		b, err := fs.ReadFile(static, name)
		if err != nil {
			t.Errorf("%s is imported but not embedded", name)
			return
		}
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			walk(path.Join(path.Dir(name), m[1]))
		}
	}
	walk("js/app.js")
	// app.js adds landing.js to the document itself (a script element).
	if app, _ := fs.ReadFile(static, "js/app.js"); strings.Contains(string(app), "new URL('./landing.js', import.meta.url)") {
		walk("js/landing.js")
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name := range Assets() {
		if strings.HasSuffix(name, ".js") && !reached[name] {
			t.Errorf("%s is embedded but no page imports it", name)
		}
		b, _ := fs.ReadFile(static, name)
		// An SVG names its XML namespace, which is fetched from nowhere.
		b = bytes.ReplaceAll(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil)
		if m := external.Find(b); m != nil {
			t.Errorf("%s refers to another host: %s", name, m)
		}
	}
}

// Each route of the shell has its view in a module that exports it.
func TestEveryRouteHasAView(t *testing.T) {
	app, _ := fs.ReadFile(static, "js/app.js")
	routes := regexp.MustCompile(`\[/\^(\\/[^,]*)\$/, '(\w+)', '(\w+)'\]`).FindAllStringSubmatch(string(app), -1)
	if len(routes) < 14 {
		t.Fatalf("found %d routes in app.js", len(routes))
	}
	imports := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+): \(\) => import\('\./([\w.]+)'\)`).FindAllStringSubmatch(string(app), -1) {
		imports[m[1]] = m[2]
	}
	// A view loaded with the shell: import * as NAME from './FILE' and
	// VIEW: () => NAME.
	for _, m := range regexp.MustCompile(`import \* as (\w+) from '\./([\w.]+)'`).FindAllStringSubmatch(string(app), -1) {
		for _, v := range regexp.MustCompile(`(\w+): \(\) => `+m[1]+`,`).FindAllStringSubmatch(string(app), -1) {
			imports[v[1]] = m[2]
		}
	}
	for _, r := range routes {
		mod, ok := imports[r[2]]
		if !ok {
			t.Errorf("route %s: module %s is not imported", r[1], r[2])
			continue
		}
		src, err := fs.ReadFile(static, "js/"+mod)
		if err != nil || !strings.Contains(string(src), "export async function "+r[3]+"(") {
			t.Errorf("route %s: js/%s does not export %s", r[1], mod, r[3])
		}
	}
}

// The index page loads only the agent's own files.
func TestIndexLoadsOnlyLocalFiles(t *testing.T) {
	w := get(t, Handler(), http.MethodGet, "/ui/")
	body, _ := io.ReadAll(w.Body)
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(body), -1) {
		if !strings.HasPrefix(m[1], Prefix) {
			t.Errorf("index.html loads %s, outside %s", m[1], Prefix)
			continue
		}
		if w := get(t, Handler(), http.MethodGet, m[1]); w.Code != http.StatusOK {
			t.Errorf("index.html loads %s: %d", m[1], w.Code)
		}
	}
}

// A path under one of the UI's pages serves index.html, whose router
// shows that page (/ui/jobs is #/jobs); every route of app.js has its
// first segment in pages, and nothing else does.
func TestPagePathsServeTheIndex(t *testing.T) {
	h := Handler()
	index := get(t, h, http.MethodGet, "/ui/").Body.String()
	for _, p := range []string{"/ui/jobs", "/ui/job/default/web", "/ui/job/default/tmpl/dispatch-1", "/ui/topology", "/ui/alloc/0b5c", "/ui/admin/organizations"} {
		w := get(t, h, http.MethodGet, p)
		if w.Code != http.StatusOK || w.Body.String() != index || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("GET %s = %d %s, want index.html", p, w.Code, w.Header().Get("Content-Type"))
		}
	}
	for _, p := range []string{"/ui/nosuch", "/ui/js/nosuch.js", "/ui/jobs/"} {
		if w := get(t, h, http.MethodGet, p); w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, w.Code)
		}
	}
	app, _ := fs.ReadFile(static, "js/app.js")
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[/\^\\/(\w+)`).FindAllStringSubmatch(string(app), -1) {
		seen[m[1]] = true
		if !pages[m[1]] {
			t.Errorf("app.js routes /%s, which pages lacks: /ui/%s would be a 404", m[1], m[1])
		}
	}
	for p := range pages {
		if !seen[p] {
			t.Errorf("pages has %q, which no route of app.js starts with", p)
		}
	}
}

// /favicon.ico, which browsers ask for, is the UI's icon.
func TestFavicon(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	w := get(t, Wrap(api), http.MethodGet, "/favicon.ico")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(w.Body.String(), "<svg") {
		t.Errorf("GET /favicon.ico = %d %s", w.Code, w.Header().Get("Content-Type"))
	}
}

// The index names its scripts and stylesheet under /ui/v/BUILD/, which
// is served to be kept for good; another build's path gets the same file
// revalidated; nothing else is under /ui/v/.
func TestVersionedFiles(t *testing.T) {
	h := Handler()
	b := Build()
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(b) {
		t.Fatalf("Build() = %q", b)
	}
	index := get(t, h, http.MethodGet, "/ui/").Body.String()
	if w := get(t, h, http.MethodGet, "/ui/"); w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("index Cache-Control %q, want no-cache", w.Header().Get("Cache-Control"))
	}
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`).FindAllStringSubmatch(index, -1)
	versionedRefs := 0
	for _, m := range refs {
		if strings.HasSuffix(m[1], ".svg") {
			continue // the icon keeps its plain path
		}
		name, ok := strings.CutPrefix(m[1], "/ui/v/"+b+"/")
		if !ok {
			t.Errorf("index.html names %s, not under /ui/v/%s/", m[1], b)
			continue
		}
		versionedRefs++
		w := get(t, h, http.MethodGet, m[1])
		if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != immutable || w.Body.Len() != Assets()[name] {
			t.Errorf("GET %s = %d Cache-Control %q, %d bytes", m[1], w.Code, w.Header().Get("Cache-Control"), w.Body.Len())
		}
		if w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("Content-Type") != contentTypes[path.Ext(name)] {
			t.Errorf("GET %s: headers %v", m[1], w.Header())
		}
	}
	if versionedRefs < 3 {
		t.Errorf("index.html names %d versioned files: %s", versionedRefs, index)
	}
	// A page loaded from another build still gets its modules.
	w := get(t, h, http.MethodGet, "/ui/v/000000000000/js/app.js")
	if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "no-cache" || w.Body.Len() != Assets()["js/app.js"] {
		t.Errorf("GET another build's app.js = %d Cache-Control %q", w.Code, w.Header().Get("Cache-Control"))
	}
	for _, p := range []string{"/ui/v/" + b + "/index.html", "/ui/v/" + b + "/nosuch.js", "/ui/v/" + b + "/jobs", "/ui/v/" + b, "/ui/v/" + b + "/", "/ui/v/" + b + "/js/../../ui.go"} {
		if w := get(t, h, http.MethodGet, p); w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, w.Code)
		}
	}
}

// The build changes with any file's content or name, and not with the
// index's.
func TestBuildFollowsTheFiles(t *testing.T) {
	files := map[string]asset{"index.html": {body: []byte("a")}, "js/app.js": {body: []byte("x")}, "style.css": {body: []byte("y")}}
	b := buildOf(files)
	files["index.html"] = asset{body: []byte("b")}
	if buildOf(files) != b {
		t.Errorf("the index's content changed the build")
	}
	files["js/app.js"] = asset{body: []byte("x2")}
	if buildOf(files) == b {
		t.Errorf("a module's content did not change the build")
	}
	files["js/app.js"] = asset{body: []byte("x")}
	delete(files, "style.css")
	files["style2.css"] = asset{body: []byte("y")}
	if buildOf(files) == b {
		t.Errorf("renaming a file did not change the build")
	}
}
