package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// maxSecretFile bounds what --basic-auth-file and --token-file read: a
// secret is a line, not a file's worth.
const maxSecretFile = 64 << 10

// secretSource names where one of the dashboard's secrets may come from:
// a flag (seen by ps and /proc of other users), a file flag, and an
// environment variable, in that order.
type secretSource struct {
	flag, fileFlag, env string
}

var (
	basicAuthSource = secretSource{flag: "basic-auth", fileFlag: "basic-auth-file", env: "SHARDQ_DASHBOARD_BASIC_AUTH"}
	tokenSource     = secretSource{flag: "token", fileFlag: "token-file", env: "SHARDQ_DASHBOARD_TOKEN"}
)

// read returns the secret and where it came from, "" when none of the
// three is given. A source given empty or blank is a usage error, never
// "no secret": a dashboard is not opened by an unset variable in a
// script. Messages name the source, never the secret.
func (s secretSource) read(m *Main, set map[string]bool, value, file string) (secret, from string, err error) {
	switch {
	case set[s.flag] && set[s.fileFlag]:
		return "", "", usageErr("--%s and --%s: give one", s.flag, s.fileFlag)
	case set[s.flag]:
		secret, from = value, "--"+s.flag
	case set[s.fileFlag]:
		from = "--" + s.fileFlag + " " + file
		if secret, err = readSecretFile(file); err != nil {
			return "", "", usageErr("--%s: %v", s.fileFlag, err)
		}
		warnShared(m, "secret file", file)
	default:
		v, ok := m.lookupEnv(s.env)
		if !ok {
			return "", "", nil
		}
		secret, from = v, s.env
	}
	if strings.TrimSpace(secret) == "" {
		return "", "", usageErr("%s is empty", from)
	}
	return secret, from, nil
}

// readSecretFile reads a secret from a file, without its trailing
// newline, as editors and echo leave one.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s is larger than %d bytes: not a secret", path, maxSecretFile)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// lookupEnv reads an environment variable and whether it is set.
func (m *Main) lookupEnv(k string) (string, bool) {
	if m.LookupEnv != nil {
		return m.LookupEnv(k)
	}
	v := m.Getenv(k)
	return v, v != ""
}
