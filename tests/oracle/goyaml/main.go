// The YAML oracle of credlint's tests: reads each file named on the command line as kubectl,
// Helm and Argo CD read a manifest stream, and prints one JSON line per file:
//
//	{"file": NAME, "docs": [{"json": VALUE} | {"error": MESSAGE}, ...]}
//
// The stream is cut into documents at `---` lines as k8s.io/apimachinery's YAMLReader cuts it
// (lines read up to '\n', a CR before it dropped; a line starting with `---` ends a document,
// and anything but spaces and a comment after the marker is an error), and each document is
// converted with sigs.k8s.io/yaml's YAMLToJSON (go-yaml v2 underneath). Documents that convert
// to nothing or to null are left out, as kubectl skips them. The first error ends the file's
// list: kubectl refuses the whole file there.
//
// Built by tests/yaml_oracle.rs with GOPATH=/usr/share/gocode GO111MODULE=off against Debian's
// golang-gopkg-yaml.v2-dev and golang-k8s-sigs-yaml-dev; nothing is downloaded.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	goyaml "gopkg.in/yaml.v2"
	"sigs.k8s.io/yaml"
)

type doc struct {
	JSON  json.RawMessage `json:"json,omitempty"`
	Error string          `json:"error,omitempty"`
	// Two keys of one mapping that differ in YAML (`1` and "1") but become the same JSON key:
	// which value JSON keeps follows Go's map order, which is random.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// ambiguous reports whether a decoded document has a mapping with two keys that
// sigs.k8s.io/yaml turns into the same JSON key.
func ambiguous(v interface{}) bool {
	switch v := v.(type) {
	case map[interface{}]interface{}:
		seen := map[string]bool{}
		for k, item := range v {
			key := fmt.Sprint(k)
			if f, ok := k.(float64); ok {
				key = strconv.FormatFloat(f, 'g', -1, 32)
			}
			if seen[key] || ambiguous(item) {
				return true
			}
			seen[key] = true
		}
	case []interface{}:
		for _, item := range v {
			if ambiguous(item) {
				return true
			}
		}
	}
	return false
}

type file struct {
	File string `json:"file"`
	Docs []doc  `json:"docs"`
}

// readLine returns one line with its '\n' restored, as apimachinery's LineReader does:
// bufio's ReadLine strips "\n" or "\r\n", and the reader appends "\n" to every line.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buffer bytes.Buffer
	isPrefix := true
	var err error
	var line []byte
	for isPrefix && err == nil {
		line, isPrefix, err = r.ReadLine()
		buffer.Write(line)
	}
	buffer.WriteByte('\n')
	return buffer.Bytes(), err
}

// chunks cuts a stream as apimachinery's YAMLReader.Read does, call after call. A bad
// separator is returned as an error in place of the document it ends.
func chunks(data []byte) ([][]byte, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	var out [][]byte
	var buffer bytes.Buffer
	for {
		line, err := readLine(r)
		if err != nil && err != io.EOF {
			return out, err
		}
		if bytes.HasPrefix(line, []byte("---")) {
			rest := strings.TrimSpace(string(line[3:]))
			if len(rest) > 0 && rest[0] != '#' {
				return out, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			if buffer.Len() != 0 {
				// The marker line ends this document and starts no other: the next
				// document begins after it.
				out = append(out, append([]byte(nil), buffer.Bytes()...))
				buffer.Reset()
				if err == io.EOF {
					return out, nil
				}
				continue
			}
			if err == io.EOF {
				return out, nil
			}
		}
		if err == io.EOF {
			if buffer.Len() != 0 {
				out = append(out, append([]byte(nil), buffer.Bytes()...))
			}
			return out, nil
		}
		buffer.Write(line)
	}
}

func read(name string) file {
	f := file{File: name, Docs: []doc{}}
	data, err := os.ReadFile(name)
	if err != nil {
		f.Docs = append(f.Docs, doc{Error: err.Error()})
		return f
	}
	parts, cutErr := chunks(data)
	for _, part := range parts {
		j, err := yaml.YAMLToJSON(part)
		if err != nil {
			f.Docs = append(f.Docs, doc{Error: err.Error()})
			return f
		}
		j = bytes.TrimSpace(j)
		if len(j) == 0 || bytes.Equal(j, []byte("null")) {
			continue
		}
		var decoded interface{}
		_ = goyaml.Unmarshal(part, &decoded)
		f.Docs = append(f.Docs, doc{JSON: j, Ambiguous: ambiguous(decoded)})
	}
	if cutErr != nil {
		f.Docs = append(f.Docs, doc{Error: cutErr.Error()})
	}
	return f
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for _, name := range os.Args[1:] {
		if err := enc.Encode(read(name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
