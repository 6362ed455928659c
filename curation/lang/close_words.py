"""Words that tell close standards apart: Bosnian, Croatian and Serbian; Malay and Indonesian; Bokmål and Nynorsk.

Character n-gram models (lid.176, lingua) cannot separate these: the languages share almost every n-gram, and
their training text (Wikipedia, Leipzig news) mixes the standards. What does separate them is a closed set of
words each standard writes differently (Tiedemann & Ljubesic 2012, "Efficient discrimination between closely
related languages", found such lexical "blacklists" the most accurate features for bs/hr/sr). Where `langid`'s
pooled leader is one of a group's languages it counts them, and each occurrence shifts the odds within the group.

Sources. Bosnian/Croatian/Serbian: the standard-language differences listed in Wikipedia's "Differences between
standard Bosnian, Croatian and Serbian" (vocabulary: `tisuća`/`hiljada`, `tijekom`/`tokom`, `sustav`/`sistem`,
the Croatian month names; the jat reflex: ijekavian `vrijeme`, `mjesto` in Bosnian and Croatian, ekavian
`vreme`, `mesto` in standard Serbian; `historija` Bosnian, `istorija` Serbian, `povijest` Croatian). A word's
languages are those whose standard writes it so; Serbian written in ijekavian (Montenegro, Republika Srpska)
reads as Bosnian here, as it does to the models. Malay/Indonesian: Wikipedia's "Comparison of Standard Malay
and Indonesian" (`kerana`/`karena`, `bahawa`/`bahwa`, `-iti`/`-itas`, month and day names...), each word kept
only where wordfreq 3.1.1's Zipf frequency in its language exceeds the other's by at least 1 (ten times as
frequent; a one-off check, wordfreq is not a dependency: `terdapat`, `rapat`, `besok`, `pejabat`,
`pemerintah` and others failed it). Bokmål/Nynorsk: the two written standards' forms of the commonest words
(Språkrådet's norms; `ikke`/`ikkje`, `jeg`/`eg`, `hva`/`kva`, `fra`/`frå`, `en`/`ein`...). Names and topics
(country, currency, city names) are left out, so that Malay text about Indonesia is not read as Indonesian.
"""

from __future__ import annotations

from functools import cache

# (languages whose standard writes these words, the words)
_SOURCES: tuple[tuple[frozenset[str], str], ...] = (
    # Croatian, not Bosnian or Serbian: vocabulary, month names
    (frozenset({"hr"}), """
        tijekom sustav sustava sustavu sustavi sustave točno točka točke točku tko tjedan tjedna tjednu tjedno
        tjedana izvješće izvješća izvješću nogomet nogometni nogometna nogometaš nogometaši sveučilište
        sveučilišta sveučilištu znanost znanosti znanstveni znanstvenici zrakoplov zrakoplova glazba glazbe glazbu
        glazbeni kazalište kazališta kruh vlak vlaka siječanj siječnja veljača veljače ožujak ožujka travanj
        travnja svibanj svibnja lipanj lipnja srpanj srpnja kolovoz kolovoza rujan rujna listopad listopada studeni
        studenoga prosinac prosinca mirovina mirovine tvrtka tvrtke tvrtki tvrtku veleposlanik veleposlanstvo
        priopćenje priopćio priopćila dužnosnik dužnosnici dužnosnika pozornost pozornosti primjerice iznimno
        iznimka kupnja računalo računala računalni uporaba uporabe vjerojatno povijest povijesti povijesni
        povijesne opskrba"""),
    # Bosnian and Serbian, not Croatian
    (frozenset({"bs", "sr"}), """
        tokom hiljada hiljadu hiljade saradnja saradnje saradnju saradnji saradnik saradnici sistem sistema sistemu
        sistemi sisteme tačno tačka tačke tačku ko šta sedmica sedmice sedmicu sedmici uslov uslovi uslova uslovima
        uslove učestvovati učešće učestvuje učestvovao učestvovali učestvuju porodica porodice porodici porodicu
        fudbal fudbalski fudbalska fudbaler fudbaleri univerzitet univerziteta univerzitetu nauka nauke nauci naučni
        naučnici avion aviona muzika muzike muziku muzički pozorište pozorišta voz voza januar januara februar
        februara mart marta aprila maj maja juni juna juli jula septembar septembra oktobar oktobra novembar
        novembra decembar decembra penzija penzije firma firme preduzeće preduzeća komandant ambasador ambasada
        ambasade zvaničnik zvaničnici zvaničnika pažnja pažnju pažnje izuzetno izuzetak kupovina računar računara
        upotreba upotrebe takođe"""),
    # Bosnian only: `h` kept where Serbian drops it, and Bosnian spellings
    (frozenset({"bs"}), """
        historija historije historiji historiju historijski historijske historijskog august augusta saopćenje
        saopćio saopćila vjerovatno lahko hljeb kahva sahat izvještaj"""),
    # Serbian (ekavian), not Bosnian or Croatian
    (frozenset({"sr"}), """
        vreme mesto mesta mestu cena cene uvek dve pre posle rešenje rešenja deo dela
        reč reči dete deca lepo mleko reka reke vest vesti pesma pesme verovatno predsednik predsednika
        predsedniku opština opštine opštini istorija istorije istoriji istorijski juče avgust avgusta saopštenje
        saopštio saopštila hleb nedelja sreda gde devojka čovek čoveka čoveku vrednost vrednosti mera mere meru
        merama primena primene primenu savet saveta savetu savest veru deteta mesec meseca telo tela sever severni
        lek svedok svedoci sedište sednica sednice izveštaj ocena ocene promena promene smer beli bela vek veka
        delovanje delatnost"""),
    # Bosnian and Croatian, not standard Serbian: ijekavian forms, and Croatian words Bosnian's standard admits
    # beside the Serbian ones (`obitelj` beside `porodica`, `tisuća` beside `hiljada`)
    (frozenset({"bs", "hr"}), """
        vrijeme mjesto mjesta mjestu svijet svijeta svijetu cijena cijene uvijek dvije prije poslije rješenje
        rješenja dio dijela dijelu riječ riječi dijete djeca lijepo mlijeko rijeka rijeke vijest vijesti pjesma
        pjesme vjera predsjednik predsjednika predsjedniku općina općine općini jučer također srijeda nedjelja gdje
        djevojka obitelj obitelji tisuća tisuću tisuće suradnja suradnje suradnju suradnji suradnik suradnici uvjet
        uvjeti uvjeta uvjetima uvjete sudjelovati sudjelovanje sudjeluje sudjelovao sudjelovali sudjeluju čovjek
        čovjeka čovjeku vrijednost vrijednosti mjera mjere mjeru mjerama primjena primjene primjenu savjet savjeta
        savjetu savjest vjeru djeteta mjesec mjeseca tijelo tijela sjever sjeverni lijek svjedok svjedoci sjedište
        sjednica sjednice ocjena ocjene promjena promjene smjer bijeli bijela vijek vijeka djelovanje djelatnost"""),
    # Nynorsk, not Bokmål: function words and common words whose Nynorsk form is the only standard one
    (frozenset({"nn"}), """
        ikkje eg kva korleis kvifor kven noko nokon nokre mykje berre dei frå òg ho heile sjølv fleire vere vore
        eit ein difor saman kyrkje veke vatn medan sidan utan fekk gjekk vart meir anna tidlegare seinare vidare
        framleis eigen eige eigne einaste heim skule viss kvar"""),
    # Bokmål, not Nynorsk
    (frozenset({"nb"}), """
        ikke jeg hva hvordan hvorfor hvem noe noen mye bare fra også hun hele selv flere være vært et en derfor
        sammen kirke uke vann mens siden uten fikk gikk ble mer annet tidligere senere videre fremdeles egen eget
        egne eneste hjem skole hvis hver hvor nå"""),
    (frozenset({"ms"}), """
        kerana bahawa iaitu sahaja wang selepas kenderaan polis syarikat universiti kualiti aktiviti komuniti
        fasiliti identiti peratus bilion sebarang mesyuarat kakitangan telefon televisyen pelancongan hospital
        kempen projek jurulatih mahu isnin khamis jumaat julai ogos disember sukan akhbar bas teksi
        perlembagaan basikal esok kelmarin"""),
    (frozenset({"id"}), """
        karena bahwa yaitu uang kendaraan kantor universitas kualitas aktivitas komunitas fasilitas identitas
        persen miliar karyawan telepon gratis pajak pariwisata wisatawan dokter kampanye proyek senin kamis jumat
        maret agustus desember juni juli kabupaten provinsi bisa nggak gak banget sih olahraga bandara taksi toko
        mobil sepeda ponsel kemarin aja kayak bikin"""),
)
# The groups whose languages the words tell apart (a word votes only inside its own group).
GROUPS: tuple[frozenset[str], ...] = (frozenset({"bs", "hr", "sr"}), frozenset({"id", "ms"}), frozenset({"nb", "nn"}))


@cache
def marker_table() -> dict[str, frozenset[str]]:
    """word -> the languages whose standard writes it (`juni` is Bosnian, Serbian and Indonesian)."""
    table: dict[str, frozenset[str]] = {}
    for languages, words in _SOURCES:
        for word in words.split():
            table[word] = table.get(word, frozenset()) | languages
    return table


def group_of(lang: str) -> frozenset[str] | None:
    """The group `lang` is told apart within, or None."""
    return next((group for group in GROUPS if lang in group), None)


def marker_votes(text: str, group: frozenset[str]) -> dict[str, int]:
    """Per language of `group`, how many words of `text` its standard writes and some neighbour's does not."""
    table = marker_table()
    votes = dict.fromkeys(group, 0)
    for word in text.lower().split():
        for lang in table.get(word.strip(".,;:!?\"'()[]«»„“”‘’-–—…*/"), frozenset()) & group:
            votes[lang] += 1
    return votes
