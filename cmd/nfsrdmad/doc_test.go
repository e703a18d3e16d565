//go:build linux

package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// The command's doc comment (go doc, the Flags list) names every flag -h prints.
func TestDocListsEveryFlag(t *testing.T) {
	var usage bytes.Buffer
	parseFlags([]string{"-h"}, &usage)
	flags := regexp.MustCompile(`(?m)^  (-[a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1)
	if len(flags) < 10 {
		t.Fatalf("-h lists %d flags:\n%s", len(flags), usage.String())
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, m := range flags {
		if !strings.Contains(doc, "\t"+m[1]+" ") && !strings.Contains(doc, "\t"+m[1]+"\n") {
			t.Errorf("the doc comment's Flags list does not name %s", m[1])
		}
	}
}
