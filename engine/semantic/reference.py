"""Reference passages for the score of a model nobody fitted (semantic.Standing, SPEC §15).

A cosine means nothing alone: each model has its own scale (e5's unrelated texts sit near
0.75, MiniLM's near 0.03). A section's score is therefore its cosine's standing against
the query's cosines with these passages, which are about nothing a documentation corpus is
about (cooking, sport, weather, history...), in the languages of the judged sets and a few
more, shaped as passage_text makes a section (its heading path, then its text). Measured
against a sample of the corpus instead, a single-minded corpus (APISIX's Chinese pages, a
folder of seven sections about services) leaves no answer standing out
(docs/semantic.md, "A score for a model nobody fitted"). Written for citeline (no licence
to track); changing them changes every unfitted model's scores, so the measurement is
redone with them (tests/benchmarks/semantic/standing.py).
"""

from __future__ import annotations

REFERENCE_VERSION = 1

REFERENCE: tuple[str, ...] = (
    "Bread › Kneading\nKnead the dough for ten minutes until it is smooth and elastic, then "
    "let it rise in a warm place until it doubles in size.",
    "Tomato soup\nRoast the tomatoes with garlic and olive oil, blend them with stock and "
    "season with salt, pepper and a little basil.",
    "Marathon training › Long runs\nIncrease the distance of the weekly long run by no more "
    "than ten percent, and rest the day after.",
    "Football › Offside\nA player is offside when nearer to the opponents' goal line than "
    "both the ball and the second-last opponent.",
    "Chess openings › Sicilian Defence\nBlack answers 1.e4 with c5, fighting for the centre "
    "from the side instead of mirroring White's pawn.",
    "Weather › Thunderstorms\nThunderstorms form when warm, moist air rises quickly into "
    "colder air and condenses into tall cumulonimbus clouds.",
    "Solar system › Jupiter\nJupiter is the largest planet of the solar system, a gas giant "
    "with a storm larger than the Earth, the Great Red Spot.",
    "Roman Empire › Fall\nThe Western Roman Empire ended in 476 when Odoacer deposed the "
    "emperor Romulus Augustulus.",
    "Photosynthesis\nPlants turn light, water and carbon dioxide into sugar and oxygen in "
    "their chloroplasts.",
    "Violin › Tuning\nThe four strings of a violin are tuned in fifths: G, D, A and E.",
    "Gardening › Roses\nPrune roses in late winter, cutting just above an outward-facing bud "
    "and removing dead or crossing stems.",
    "Personal finance › Budget\nWrite down every expense for a month, then set a limit for "
    "each category and save what is left.",
    "Travel › Packing\nRoll clothes instead of folding them, and keep documents and "
    "medicines in your hand luggage.",
    "Dog training › Sit\nHold a treat above the dog's nose and move it back; when the dog "
    "sits, say the word and reward it.",
    "First aid › Burns\nCool a burn under running water for twenty minutes; do not use ice "
    "or butter.",
    "Painting › Watercolour\nWork from light to dark: watercolour is transparent, and white "
    "comes from the paper itself.",
    "Poetry › Sonnet\nA sonnet has fourteen lines; Shakespeare's rhyme as three quatrains "
    "and a closing couplet.",
    "Coffee › Espresso\nAn espresso forces hot water through finely ground coffee at about "
    "nine bars of pressure for twenty-five seconds.",
    "Birds › Migration\nMany songbirds migrate at night, finding their way by the stars and "
    "the Earth's magnetic field.",
    "Volcanoes\nA volcano erupts when magma, lighter than the rock around it, rises through "
    "cracks in the crust.",
    "Wedding › Planning\nBook the venue first, then the photographer and the caterer, and "
    "send the invitations two months ahead.",
    "Cycling › Tyres\nA road tyre is inflated to six to eight bar; a wider tyre at a lower "
    "pressure is more comfortable.",
    "Knitting › Casting on\nMake a slip knot, put it on the needle, and loop the yarn around "
    "your thumb for each new stitch.",
    "Oceans › Tides\nTides rise and fall twice a day, pulled by the Moon and, less, by the Sun.",
    "面包 › 发酵\n把面团放在温暖的地方发酵，直到体积变成原来的两倍。",
    "足球 › 规则\n每队十一名球员，比赛分为上下两个半场，各四十五分钟。",
    "天气 › 台风\n台风是在热带海洋上形成的强烈气旋，常带来暴雨和大风。",
    "历史 › 唐朝\n唐朝是中国历史上的一个繁荣时期，首都长安是当时世界上最大的城市之一。",
    "烹饪 › 红烧肉\n五花肉切块焯水，加糖炒色，再加酱油和水小火炖一个小时。",
    "旅行 › 签证\n出国旅行前请确认目的地的签证要求，并提前准备好护照。",
    "料理 › 味噌汁\n出汁を温め、豆腐とわかめを入れてから、火を止めて味噌を溶かします。",
    "野球 › ルール\n九人の選手で守り、三つのアウトで攻守が交代します。",
    "天気 › 梅雨\n梅雨は六月から七月にかけての雨の多い季節です。",
    "요리 › 김치\n배추를 소금에 절인 뒤 고춧가루와 마늘로 만든 양념을 버무립니다.",
    "축구 › 월드컵\n월드컵은 사 년마다 열리는 국제 축구 대회입니다.",
    "Kochen › Kartoffelsalat\nKartoffeln kochen, in Scheiben schneiden und mit Brühe, Essig "
    "und Zwiebeln anmachen.",
    "Wandern › Ausrüstung\nFeste Schuhe, Regenjacke und genug Wasser gehören in jeden Rucksack.",
    "Cuisine › Crêpes\nMélangez la farine, les œufs et le lait, laissez reposer la pâte une "
    "heure, puis faites cuire dans une poêle chaude.",
    "Histoire › Révolution\nLa prise de la Bastille, le 14 juillet 1789, marque le début de "
    "la Révolution française.",
    "Cocina › Paella\nSofríe el pollo y las verduras, añade el arroz y el azafrán, y cuece "
    "sin remover durante veinte minutos.",
    "Fútbol › Penalti\nEl penalti se lanza desde once metros, con el portero sobre su línea.",
    "Culinária › Feijoada\nCozinhe o feijão preto com carnes de porco defumadas e sirva com "
    "arroz, couve e laranja.",
    "Astronomia › Lua\nA Lua leva cerca de vinte e sete dias para dar uma volta completa em "
    "torno da Terra.",
    "Music theory › Scales\nA major scale follows the steps whole, whole, half, whole, whole, "
    "whole, half.",
    "Human body › Heart\nThe heart has four chambers and beats about a hundred thousand times "
    "a day.",
    "Architecture › Gothic\nGothic cathedrals use pointed arches, ribbed vaults and flying "
    "buttresses to raise tall walls full of stained glass.",
    "Tennis › Scoring\nPoints count love, fifteen, thirty, forty and game; six games win a set.",
    "Fishing › Bait\nWorms catch most freshwater fish; trout also take flies on the surface.",
)


# The passages of each topic that passages of several scripts share, by position in
# REFERENCE, for unfitted.reads_cjk: a model reads CJK when it puts a CJK passage nearest
# the Latin passage on the same topic (cooking, sport, weather, history, travel).
REFERENCE_TOPICS: dict[str, tuple[int, ...]] = {
    "food": (0, 1, 17, 24, 28, 30, 33, 35, 37, 39, 41),
    "sport": (2, 3, 25, 31, 34, 40, 46),
    "weather": (5, 26, 32),
    "history": (7, 27, 38),
    "travel": (12, 29),
}

__all__ = ["REFERENCE", "REFERENCE_TOPICS", "REFERENCE_VERSION"]
