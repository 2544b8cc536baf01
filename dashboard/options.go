package dashboard

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of New. Their messages name the field that was wrong, never a
// secret's value.
var (
	// ErrEmptySecret reports Options with no credentials, or an empty one:
	// a BasicAuth whose User or Password is empty or blank, or no BasicAuth
	// and an empty BearerToken without Unauthenticated.
	ErrEmptySecret = errors.New("dashboard: empty secret")
	// ErrInvalidOptions reports Options that contradict themselves, such
	// as Unauthenticated with credentials set.
	ErrInvalidOptions = errors.New("dashboard: invalid options")
)

// validate checks what New cannot default: the dashboard has credentials
// or is unauthenticated on purpose, and no secret is empty by accident.
func (o *Options) validate() error {
	if ba := o.BasicAuth; ba != nil {
		switch {
		case blank(ba.User):
			return fmt.Errorf("%w: BasicAuth.User is empty", ErrEmptySecret)
		case blank(ba.Password):
			return fmt.Errorf("%w: BasicAuth.Password is empty", ErrEmptySecret)
		case strings.Contains(ba.User, ":"):
			return fmt.Errorf("%w: BasicAuth.User contains a colon, which basic authentication cannot carry", ErrInvalidOptions)
		}
	}
	switch {
	case o.Unauthenticated && (o.BasicAuth != nil || o.BearerToken != ""):
		return fmt.Errorf("%w: Unauthenticated is set with BasicAuth or BearerToken; set one or the other", ErrInvalidOptions)
	case o.Unauthenticated:
		return nil
	case o.BasicAuth == nil && blank(o.BearerToken):
		return fmt.Errorf("%w: BearerToken is empty and BasicAuth is nil; set one, or Unauthenticated "+
			"for a dashboard behind your own authentication", ErrEmptySecret)
	case o.BearerToken != "" && blank(o.BearerToken):
		return fmt.Errorf("%w: BearerToken is blank", ErrEmptySecret)
	}
	return nil
}

// blank reports whether s is empty or only white space: a secret no one
// meant to set.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
