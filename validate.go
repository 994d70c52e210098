package ordersync

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// Language selects the language of validation messages. The service answers
// in English or Spanish; ordersync reads both and writes either.
type Language string

// The languages validation messages come in.
const (
	English Language = "en"
	Spanish Language = "es"
)

// ValidationError is a request the service refuses (HTTP 400), or that
// ordersync refuses before sending it: every offending field with its
// messages, keyed like the service's problem body (`errors`).
type ValidationError struct {
	Title  string
	Fields map[string][]string
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return "invalid request: " + e.Title
	}
	names := e.FieldNames()
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+": "+strings.Join(e.Fields[n], "; "))
	}
	return "invalid request: " + strings.Join(parts, ", ")
}

// FieldNames returns the offending fields, sorted.
func (e *ValidationError) FieldNames() []string {
	names := make([]string, 0, len(e.Fields))
	for n := range e.Fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type rule int

const (
	ruleRequired rule = iota
	ruleMaxLength
	ruleOneMethod
	ruleOneProduct
	rulePositive
	ruleMinQuantity
	ruleURL
	ruleMinorUnits
)

var ruleMessages = map[Language]map[rule]string{
	English: {
		ruleRequired:    "The field is required.",
		ruleMaxLength:   "The field must be at most %d characters long.",
		ruleOneMethod:   "Provide either lineItems or amount, not both and not neither.",
		ruleOneProduct:  "Provide either sku or product, not both and not neither.",
		rulePositive:    "The value must be greater than 0.",
		ruleMinQuantity: "The quantity must be at least 1.",
		ruleURL:         "The value must be an absolute http or https URL.",
		ruleMinorUnits:  "The amount has more decimal places than %s allows (%d).",
	},
	Spanish: {
		ruleRequired:    "El campo es obligatorio.",
		ruleMaxLength:   "El campo debe tener como máximo %d caracteres.",
		ruleOneMethod:   "Indique lineItems o amount, no ambos ni ninguno.",
		ruleOneProduct:  "Indique sku o product, no ambos ni ninguno.",
		rulePositive:    "El valor debe ser mayor que 0.",
		ruleMinQuantity: "La cantidad debe ser al menos 1.",
		ruleURL:         "El valor debe ser una URL http o https absoluta.",
		ruleMinorUnits:  "El monto tiene más decimales de los que permite %s (%d).",
	},
}

var validationTitles = map[Language]string{
	English: "One or more validation errors occurred.",
	Spanish: "Se produjeron uno o más errores de validación.",
}

type validator struct {
	lang   Language
	fields map[string][]string
}

func (v *validator) fail(field string, r rule, args ...any) {
	msg := ruleMessages[v.lang][r]
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	if v.fields == nil {
		v.fields = map[string][]string{}
	}
	v.fields[field] = append(v.fields[field], msg)
}

func (v *validator) maxLen(field, s string, n int) {
	if utf8.RuneCountInString(s) > n {
		v.fail(field, ruleMaxLength, n)
	}
}

func (v *validator) url(field, s string, max int) {
	if s == "" {
		return
	}
	if max > 0 {
		v.maxLen(field, s, max)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(field, ruleURL)
	}
}

func (v *validator) positive(field string, a *Amount) {
	if a == nil {
		v.fail(field, ruleRequired)
	} else if a.Sign() <= 0 {
		v.fail(field, rulePositive)
	}
}

// ValidateFor checks what Validate does and, beyond the interface, that no
// amount has more decimal places than the store's currency has minor
// units: 10.999 for a USD store is a typo the service may round. With the
// currency not known (""), it allows MaxMinorUnits, the most any currency
// in use has.
func (p *PaymentLinkParams) ValidateFor(lang Language, currency string) error {
	err := p.Validate(lang)
	var ve *ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	if _, ok := ruleMessages[lang]; !ok {
		lang = English
	}
	v := &validator{lang: lang}
	if ve != nil {
		v.fields = ve.Fields
	}
	units, known := MinorUnits(currency)
	name := currency
	if !known {
		units, name = MaxMinorUnits, "any currency"
	}
	check := func(field string, a *Amount) {
		if a != nil && a.DecimalPlaces() > units {
			v.fail(field, ruleMinorUnits, name, units)
		}
	}
	check("amount", p.Amount)
	for i, it := range p.LineItems {
		if it.Product != nil {
			check(fmt.Sprintf("lineItems[%d].product.price", i), it.Product.Price)
		}
	}
	if v.fields == nil {
		return nil
	}
	return &ValidationError{Title: validationTitles[lang], Fields: v.fields}
}

// Validate checks every rule of interface version 2.0 and returns a
// *ValidationError naming every offending field, with messages in lang
// (English when lang is unknown), or nil.
func (p *PaymentLinkParams) Validate(lang Language) error {
	if _, ok := ruleMessages[lang]; !ok {
		lang = English
	}
	v := &validator{lang: lang}
	switch {
	case len(p.LineItems) > 0 && p.Amount != nil, len(p.LineItems) == 0 && p.Amount == nil:
		v.fail("lineItems", ruleOneMethod)
		if p.Amount != nil {
			v.fail("amount", ruleOneMethod)
		}
	case p.Amount != nil:
		v.positive("amount", p.Amount)
	}
	for i, it := range p.LineItems {
		prefix := fmt.Sprintf("lineItems[%d]", i)
		hasSKU := strings.TrimSpace(it.SKU) != ""
		if hasSKU == (it.Product != nil) {
			v.fail(prefix, ruleOneProduct)
		}
		if it.Product != nil {
			if strings.TrimSpace(it.Product.Name) == "" {
				v.fail(prefix+".product.name", ruleRequired)
			}
			v.positive(prefix+".product.price", it.Product.Price)
			v.url(prefix+".product.imageUrl", it.Product.ImageURL, MaxImageURL)
		}
		if it.Quantity < 1 {
			v.fail(prefix+".quantity", ruleMinQuantity)
		}
	}
	v.maxLen("orderReference", p.OrderReference, MaxOrderReference)
	v.maxLen("orderName", p.OrderName, MaxOrderName)
	v.maxLen("orderDescription", p.OrderDescription, MaxOrderDescription)
	v.url("successUrl", p.SuccessURL, 0)
	v.url("cancelUrl", p.CancelURL, 0)
	if p.ExpirationMinutes != nil && *p.ExpirationMinutes <= 0 {
		v.fail("expirationMinutes", rulePositive)
	}
	for i, m := range p.Metadata {
		if strings.TrimSpace(m.Name) == "" {
			v.fail(fmt.Sprintf("metadata[%d].name", i), ruleRequired)
		}
	}
	if v.fields == nil {
		return nil
	}
	return &ValidationError{Title: validationTitles[lang], Fields: v.fields}
}
