"""Claims the pools have nothing on, to choose and check the relevance floor.

PERSPECTRUM's claims are debate motions; these are not: everyday statements, other
languages, and letter salad. :data:`TUNE` (with :func:`letter_salad`) chooses the floor
on dev; :data:`HELD_OUT` (with the nonsense claim that first showed the problem, a claim
in Chinese, and three debate claims in Arabic, Hindi and Korean added when the Chinese
one was found answered) is never read while tuning, only by ``evaluate --system
pipeline``, so the check is honest. All written for this project.
"""

from __future__ import annotations

import random

TUNE = (
    "The bus to the airport leaves every twenty minutes",
    "Add two cups of flour and a pinch of salt",
    "My printer keeps jamming on the second page",
    "The meeting has been moved to Thursday afternoon",
    "Tomatoes grow best in full sun",
    "Please return your library books by Friday",
    "The recipe calls for unsalted butter",
    "Turn left at the second traffic light",
    "The password must contain at least eight characters",
    "Our cat sleeps on the windowsill all day",
    "The concert starts at eight and doors open at seven",
    "Paint the fence before it rains",
    "Der Zug nach Berlin hat zwanzig Minuten Verspätung",
    "El restaurante abre a las nueve de la mañana",
    "今天的天气很好，我们去公园散步吧",
    "Le chat dort sur le canapé",
    "東京の電車はとても混んでいます",
    "Il gelato al pistacchio è il mio preferito",
    "lorem ipsum dolor sit amet consectetur",
    "asdf qwer zxcv uiop",
    "The screw needs a number two Phillips screwdriver",
    "Store the cheese in the bottom drawer of the fridge",
    "The wifi password is on the back of the router",
)

HELD_OUT = (
    "xyzzy plugh frobnicate",
    "社交媒体对社会的影响",
    "Boil the pasta for nine minutes, then drain it",
    "The parcel was left with the neighbour at number twelve",
    "Mi hermano vive en Valencia desde hace diez años",
    "Remember to water the basil on the balcony",
    "The elevator on the left is out of service",
    "Grüne Bohnen brauchen viel Wasser",
    "quux blargh snorf wibble",
    "Set the oven to two hundred degrees",
    "The train platform changed from four to six",
    "Мой брат любит играть в шахматы по вечерам",
    "Fold the towels and put them in the cupboard",
    "يجب حظر التدخين في الأماكن العامة",
    "सोशल मीडिया से समाज को नुकसान होता है",
    "동물에게도 법적 권리가 있어야 한다",
)


def letter_salad(count: int, seed: int = 13) -> list[str]:
    """``count`` claims of 3–6 random lower-case 'words' (seeded, so tuning is repeatable)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [" ".join("".join(rng.choice(letters) for _ in range(rng.randint(3, 9)))
                     for _ in range(rng.randint(3, 6))) for _ in range(count)]
