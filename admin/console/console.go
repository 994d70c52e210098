// Package console is the back office's console as a browser gets it: the
// HTML templates of its pages and its static files (the stylesheet and the
// Overview's script), embedded in the binary. The admin package serves
// the pages, filling these templates with its views.
package console

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
)

//go:embed templates/*.html static/*
var files embed.FS

// Templates are the pages' templates, each by its file name (orders.html).
var Templates = template.Must(template.ParseFS(files, "templates/*.html"))

// Static serves the static files by name (console.css), to be mounted
// under a prefix stripped from the path.
func Static() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // static is embedded above: a build without it does not compile
	}
	return http.FileServerFS(static)
}
