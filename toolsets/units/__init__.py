"""The units toolset: `units_convert|value; from; to` converts a length, a mass, a volume, a
speed or a temperature. It is the example of a toolset that brings its own words: its folder
holds the tool (here), the sentences people say for it in ru and en (`intents.yaml`, answered
without the model) and nothing else; one line in core.loading.REGISTRY adds it.
Runs in the session: a conversion is arithmetic."""
from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial

from core.toolsets import SessionContext, SessionToolset, invalid_args_text
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from toolsets.units.figures import figures_put_right

# each unit: its kind and its size in the kind's base unit (m, kg, l, m/s); temperatures apart
_SIZES: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1.0), "km": ("length", 1000.0),
    "in": ("length", 0.0254), "ft": ("length", 0.3048), "yd": ("length", 0.9144), "mi": ("length", 1609.344),
    "g": ("mass", 0.001), "kg": ("mass", 1.0), "t": ("mass", 1000.0), "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "ml": ("volume", 0.001), "l": ("volume", 1.0), "gal": ("volume", 3.785411784), "cup": ("volume", 0.2365882365),
    "fl oz": ("volume", 0.0295735295625),  # the US fluid ounce (an airport's liquids, a recipe's)
    "km/h": ("speed", 1 / 3.6), "m/s": ("speed", 1.0), "mph": ("speed", 0.44704), "kn": ("speed", 0.514444),
}
_TEMPERATURES = {"c": (1.0, 0.0), "f": (5 / 9, -32.0), "k": (1.0, -273.15)}  # to °C: (x + shift) * scale
# `to` = "metric" ("это скока по-нашему", "what's that in metric"): the unit of the other system a
# person would use for the same thing; a metric unit is its own
_METRIC = {"in": "cm", "ft": "m", "yd": "m", "mi": "km", "oz": "g", "lb": "kg", "gal": "l", "cup": "ml", "mph": "km/h",
           "kn": "km/h", "f": "C"}
# a speed asked in a length ("60 mph in kilometers"): that length per hour
_PER_HOUR = {"km": "km/h", "mi": "mph", "m": "m/s"}
_NAMES = ", ".join([*_SIZES, "C", "F", "K", "metric"])

UNITS_TOOLSET = ToolsetSpec(
    name="units",
    summary="convert units: length, mass, volume, speed, temperature",
    tools=[ToolSpec(name="units_convert", summary=f"convert a value; units: {_NAMES}", read_only=True,
                    said_number_args=["value"], args=[ArgSpec(name="value"), ArgSpec(name="from"), ArgSpec(name="to")])],
)


def unit_meant(unit_from: str, unit_to: str) -> str:
    """The unit `unit_to` means for a value in `unit_from`: "metric" its metric counterpart ("F" ->
    "C", "mi" -> "km"; a metric unit itself), a length for a speed that length per hour ("mph" to
    "km": "km/h"); else `unit_to` as given."""
    a, b = unit_from.casefold(), unit_to.casefold()
    if b == "metric":
        return _METRIC.get(a, unit_from)
    if a in _SIZES and _SIZES[a][0] == "speed" and b in _PER_HOUR:
        return _PER_HOUR[b]
    return unit_to


def ounces_meant(unit: str, other: str) -> str:
    """"oz" beside a volume is the fluid ounce ("сто миллилитров — это сколько унций?": 3.38 fl oz,
    not a mass); any other unit as given."""
    if unit.casefold() == "oz" and _SIZES.get(other.casefold(), ("",))[0] == "volume":
        return "fl oz"
    return unit


def degrees_meant(unit_from: str, unit_to: str) -> str:
    """The scale "degrees" said alone means (`unit_from` "deg"): the other one of the scale asked
    for ("thirty seven degrees, what's that in F?": Celsius; "100 градусов в цельсиях": Fahrenheit);
    any other unit as given."""
    if unit_from.casefold() != "deg":
        return unit_from
    return "F" if unit_to.casefold() == "c" else "C"


def convert(value: float, unit_from: str, unit_to: str) -> float:
    """`value` in `unit_from` put in `unit_to`; ValueError when either is unknown or they measure
    different things."""
    a, b = unit_from.casefold(), unit_to.casefold()
    if a in _TEMPERATURES and b in _TEMPERATURES:
        scale, shift = _TEMPERATURES[a]
        celsius = (value + shift) * scale
        back_scale, back_shift = _TEMPERATURES[b]
        return celsius / back_scale - back_shift
    if a not in _SIZES or b not in _SIZES:
        raise ValueError(f"unknown unit {unit_from if a not in _SIZES and a not in _TEMPERATURES else unit_to!r}: use {_NAMES}")
    if _SIZES[a][0] != _SIZES[b][0]:
        raise ValueError(f"{unit_from} is a {_SIZES[a][0]} and {unit_to} a {_SIZES[b][0]}: they do not convert")
    return value * _SIZES[a][1] / _SIZES[b][1]


def _figure(value: float) -> str:
    """Four significant digits, never in exponent form a user cannot read ("25 mi = 132000 ft", not 1.32e+05)."""
    if abs(value) >= 1e4:
        return f"{float(f'{value:.4g}'):.0f}"
    return f"{value:.4g}" if value == 0 or abs(value) >= 1e-4 else f"{value:.2e}"


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    try:
        value = float(args["value"].replace(",", "."))
    except ValueError:
        return CallOutcome(kind="invalid", text=invalid_args_text(UNITS_TOOLSET.tools[0], f"value {args['value']!r} is not a number"))
    try:
        unit_to = unit_meant(args["from"].strip(), args["to"].strip())
        unit_from = degrees_meant(args["from"].strip(), unit_to)
        unit_from, unit_to = ounces_meant(unit_from, unit_to), ounces_meant(unit_to, unit_from)
        result = convert(value, unit_from, unit_to)
        if not math.isfinite(value) or not math.isfinite(result):  # "inf", "nan", 1e308 °C: no reading to give
            raise ValueError(f"value {args['value']!r} converts to no finite number")
    except ValueError as exc:  # an unknown unit, two that do not convert, no finite number
        return CallOutcome(kind="invalid", text=invalid_args_text(UNITS_TOOLSET.tools[0], str(exc)))
    # a temperature to a tenth of a degree, as a thermometer shows it ("55 F = 12.8 C", not 12.78); said
    # with tenths, it keeps them ("37.2 C = 99.0 F": a fever chart's reading, not "99")
    tenths = ".1f" if not value.is_integer() else "g"
    shown = f"{round(result, 1):{tenths}}" if unit_to.casefold() in _TEMPERATURES else _figure(result)
    return CallOutcome(kind="ok", text=f"{value:g} {unit_from} = {shown} {unit_to}")


TOOLSET = SessionToolset(spec=UNITS_TOOLSET, handler=_run, answer_check=partial(figures_put_right, convert=convert))
