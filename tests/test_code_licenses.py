"""Language detection and licence detection/classification, on the licence files of every installed package."""

from __future__ import annotations

import re
import sysconfig
from collections import defaultdict
from pathlib import Path

import pytest
from identify.vendor.licenses import LICENSES

from curation.code.licenses import folder_license, header_license, is_license_file, license_class, licenses_in_file
from curation.code.repository import RepoLicenses
from curation.code.source_language import detect_language, is_binary_name, known_languages, shebang_interpreter

SITE = Path(sysconfig.get_paths()["purelib"])


@pytest.mark.parametrize(
    ("path", "head", "language"),
    [
        ("pkg/mod.py", "", "python"), ("stubs/mod.pyi", "", "python"), ("src/app.ts", "", "typescript"),
        ("src/App.tsx", "", "typescript"), ("lib/x.js", "", "javascript"), ("include/x.h", "", "c"),
        ("include/x.hpp", "", "c++"), ("x.cc", "", "c++"), ("main.go", "", "go"), ("lib.rs", "", "rust"),
        ("A.java", "", "java"), ("Program.cs", "", "c#"), ("Makefile", "", "makefile"),
        ("Dockerfile.dev", "", "dockerfile"), ("build.sh", "", "shell"), (".bashrc", "", "shell"),
        ("conf.yml", "", "yaml"), ("data.json", "", "json"), ("nb.ipynb", "", "jupyter"), ("README.md", "", "markdown"),
        ("LICENSE", "", "text"), ("notes.txt", "", "text"), ("weird.unknownext", "", None),
        ("bin/tool", "#!/usr/bin/env python3\nimport sys\n", "python"), ("bin/run", "#!/bin/bash -e\n", "shell"),
        ("bin/srv", "#!/usr/bin/env -S node --harmony\n", "javascript"), ("bin/x", "no shebang", None),
        ("img/logo.png", "", None),
        # linguist's languages identify lacks; a header's language by its text; gcc's dependency files
        ("num/solve.f", "", "fortran"), ("init.el", "", "emacs-lisp"), ("src/x.lisp", "", "common-lisp"),
        ("main.rkt", "", "racket"), ("lib/x.tcl", "", "tcl"), ("src/app.d", "import std.stdio;", "d"),
        ("build/app.d", "build/app.o: src/app.c src/app.h\n", "makefile"),
        ("x.h", "#include <vector>\nstd::vector<int> f();", "c++"),
        ("x.h", "namespace util {\nint f();\n}", "c++"), ("x.h", "@interface Foo : NSObject\n@end", "objective-c"),
        ("x.h", "#include <stdio.h>\nstruct s { int a; };\nint f(void);", "c"),
    ],
)  # fmt: skip
def test_language_from_name_extension_and_shebang(path: str, head: str, language: str | None):
    assert detect_language(path, head) == language


def test_language_mapping_is_identify_s_not_a_hand_list():
    names = known_languages()
    assert len(names) > 150  # identify maps hundreds of extensions and names
    assert {"python", "c", "c++", "rust", "go", "haskell", "terraform", "solidity", "fortran", "racket"} <= names
    assert shebang_interpreter("#!/usr/bin/env -S python3.11 -u\n") == "python3.11"
    assert is_binary_name("a/b.png") and is_binary_name("x.whl") and not is_binary_name("x.py")


def _installed_licence_folders() -> dict[str, dict[str, dict[str, str]]]:
    """dist-info name -> folder inside it -> {licence file: text}, for every installed package."""
    found: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for dist in sorted(SITE.glob("*.dist-info")):
        for path in dist.rglob("*"):
            relative = path.relative_to(dist).as_posix()
            if path.is_file() and is_license_file(relative):
                found[dist.name][""][relative] = path.read_text(encoding="utf-8", errors="replace")
    return found


def test_every_installed_package_with_a_licence_file_gets_a_licence():
    packages = _installed_licence_folders()
    assert len(packages) >= 100
    detected = {}
    for dist, folders in packages.items():
        detected[dist] = RepoLicenses({f"{dist}/{name}": text for name, text in folders[""].items()}).for_path(
            "pkg/module.py")[0]
    missing = sorted(d for d, lic in detected.items() if not lic)
    assert missing == []
    assert "permissive" in {license_class(lic) for lic in detected.values()}
    by_name = {d.split("-")[0].lower(): lic for d, lic in detected.items()}
    expected = {"requests": "Apache-2.0", "pyyaml": "MIT", "click": "BSD-3-Clause", "certifi": "MPL-2.0",
                "numpy": "BSD-3-Clause", "packaging": "Apache-2.0 OR BSD-2-Clause", "ray": "Apache-2.0"}  # "either"
    assert {k: by_name.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Apache 2.0", ["Apache-2.0"]),
        ("MIT", ["MIT"]),
        ("Copyright 2024 A. Person\n\nLicensed under the Apache License, Version 2.0 (the \"License\"); you may not "
         "use this file except in compliance with the License.", ["Apache-2.0"]),
        ("This program is free software; you can redistribute it and/or modify it under the terms of the GNU "
         "General Public License as published by the Free Software Foundation; either version 2 of the License, or "
         "(at your option) any later version.", ["GPL-2.0-or-later"]),
        ("This library is free software; you can redistribute it and/or modify it under the terms of the GNU Lesser "
         "General Public License as published by the Free Software Foundation; either version 2.1 of the License, "
         "or (at your option) any later version.", ["LGPL-2.1-or-later"]),
        ("Just some words about the project and how to build it, nothing about terms at all.", []),
        # restrictions beside a permissive notice: the repository is not permissive (it passed as MIT)
        ("Released under the MIT license.\n\n\"Commons Clause\" License Condition v1.0: the Software is provided "
         "to you by the Licensor under the License, subject to the following condition.",
         ["MIT", "LicenseRef-Commons-Clause"]),
        ("Copyright Acme.\nUnauthorized copying of this file, via any medium is strictly prohibited. Proprietary and "
         "confidential.\nThis product bundles leftpad, released under the MIT license.",
         ["LicenseRef-Proprietary", "MIT"]),
        # a licence file that is only an SPDX tag (it named none)
        ("SPDX-License-Identifier: MIT\n", ["MIT"]),
        ("SPDX-License-Identifier: Apache-2.0 OR MIT\n\nSee LICENSE-APACHE and LICENSE-MIT.", ["Apache-2.0 OR MIT"]),
        # licences `identify` ships no text of: unknown, and `license_not_kept` under any `licenses:` list
        ("MOZILLA PUBLIC LICENSE\nVersion 1.1\n\n---------------\n\n1. Definitions.\n\n1.0.1. \"Commercial Use\" "
         "means distribution or otherwise making the Covered Code available to a third party.", ["MPL-1.1"]),
        ("The Artistic License 2.0\n\nCopyright (c) 2000-2006, The Perl Foundation.\n\nEveryone is permitted to "
         "copy and distribute verbatim copies of this license document, but changing it is not allowed.",
         ["Artistic-2.0"]),
        ("The \"Artistic License\"\n\nPreamble\n\nThe intent of this document is to state the conditions under which "
         "a\nPackage may be copied, such that the Copyright Holder maintains some\nsemblance of artistic control.",
         ["Artistic-1.0"]),
        ("This software is copyright (c) 2010 by A. Author.\n\nThis is free software; you can redistribute it and/or "
         "modify it under\nthe same terms as the Perl 5 programming language system itself.",
         ["Artistic-1.0-Perl OR GPL-1.0-or-later"]),  # every CPAN distribution's
    ],
)
def test_licence_notices_and_names(text: str, expected: list[str]):
    assert licenses_in_file(text) == expected


def test_mit_no_attribution_is_not_mit():
    """MIT-0 is MIT's text without its condition (keep the notice in copies); no SPDX text here holds it, so it was
    read as MIT."""
    mit = next(text for spdx, text in LICENSES if spdx == "MIT")
    mit0, cut = re.subn(r"The above copyright notice.*?of the Software\.\n", "", mit, flags=re.DOTALL)
    assert cut == 1
    assert licenses_in_file(mit) == ["MIT"]
    assert licenses_in_file(mit0.replace("MIT License", "MIT No Attribution")) == ["MIT-0"]


def test_bsd_variants_and_isc_vs_0bsd_are_told_apart():
    by_id = {}
    for dist in ("click", "lazy_object_proxy", "aiohappyeyeballs"):
        for path in SITE.glob(f"{dist}-*.dist-info/**/LICENSE*"):
            by_id[dist] = licenses_in_file(path.read_text(encoding="utf-8"))[:1]
    assert by_id.get("click") == ["BSD-3-Clause"]
    if "lazy_object_proxy" in by_id:
        assert by_id["lazy_object_proxy"] == ["BSD-2-Clause"]
    if "aiohappyeyeballs" in by_id:  # CPython's LICENSE: the PSF licence (named, no SPDX text ships), and at its end
        assert by_id["aiohappyeyeballs"] == ["PSF-2.0"]  # the 0BSD of the documentation's examples (its PyPI: PSF-2.0)


def test_headers_and_classes():
    assert header_license("// SPDX-License-Identifier: GPL-2.0-or-later WITH Linux-syscall-note\nint x;") == (
        "GPL-2.0-or-later WITH Linux-syscall-note")
    assert header_license("# SPDX-License-Identifier: GPL-3.0\n") == "GPL-3.0-only"  # deprecated id normalised
    # a tag that does not parse is the file's word still: of no known class, never the repository's licence instead
    proprietary = header_license("# SPDX-License-Identifier: LicenseRef-Proprietary\nx = 1\n")
    assert proprietary == "LicenseRef-Proprietary" and license_class(proprietary) == "unknown"
    assert license_class("MIT AND LicenseRef-Commons-Clause") == "unknown"
    # the Commons Clause after a project's MIT text binds it; a bundled component's licence after it does not count
    mit = next(t for t in (p.read_text() for p in SITE.glob("*.dist-info/LICENSE*")) if "Permission is hereby" in t)
    clause = '\n\n"Commons Clause" License Condition v1.0\nThe Software is provided to you by the Licensor.\n'
    assert folder_license({"LICENSE": mit + clause}) == "MIT AND LicenseRef-Commons-Clause"
    assert folder_license({"LICENSE": mit}) == "MIT"
    assert header_license("/* Licensed under the Apache License, Version 2.0 */") == "Apache-2.0"
    assert header_license("import os\n# see LICENSE\n") is None
    perl = header_license("# This library is free software; you can redistribute it and/or modify\n# it under the "
                          "same terms as Perl itself.\npackage Foo;\n")  # a CPAN module's notice says no "licence"
    assert perl == "Artistic-1.0-Perl OR GPL-1.0-or-later" and license_class(perl) == "weak_copyleft"
    assert header_license("/* The contents of this file are subject to the Mozilla Public License Version\n * 1.1 "
                          "(the \"License\"); you may not use this file except in compliance */") == "MPL-1.1"
    assert license_class("MIT OR GPL-3.0-only") == "permissive"  # OR: the user may choose
    assert license_class("MIT AND GPL-3.0-only") == "copyleft"  # AND: the most restrictive part
    assert license_class("MPL-2.0") == "weak_copyleft" and license_class("CC0-1.0") == "permissive"
    assert license_class("Elastic-2.0") == "restricted" and license_class("LicenseRef-mine") == "unknown"
    assert license_class(None) == "unknown"
    assert folder_license({"LICENSES/MIT.txt": "whatever", "LICENSES/Apache-2.0.txt": "x"}) == "Apache-2.0 AND MIT"
    # licences each in a file of its own name are a choice (Rust's LICENSE-MIT and LICENSE-APACHE: they were AND,
    # and LICENSE-MIT beside LICENSE-GPL made a dual-licensed project copyleft)
    texts = dict(LICENSES)
    dual = folder_license({"LICENSE-MIT": mit, "LICENSE-APACHE": texts["Apache-2.0"]})
    assert dual == "Apache-2.0 OR MIT" and license_class(dual) == "permissive"
    gpl = folder_license({"LICENSE-MIT": mit, "LICENSE-GPL": texts["GPL-3.0"]})
    assert gpl == "GPL-3.0-only OR MIT" and license_class(gpl) == "permissive"
