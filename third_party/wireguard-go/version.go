package main

const Version = "0.0.20250522"
