"""KubeDL compatibility: KubeDL's own statements against tables jobarchive wrote."""
